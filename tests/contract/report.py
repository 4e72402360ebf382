"""What the test report says about the contract CLIs: the pins up front, what ran at the end."""

from __future__ import annotations

import pytest

from tests.contract import clis

INSTALLED = pytest.StashKey["clis.Installed"]()


def selected(config: pytest.Config) -> bool:
    """True when this run selects the contract tests (`-m contract` overrides the default)."""
    expr = str(config.getoption("markexpr") or "")
    return "contract" in expr and "not contract" not in expr


def header(config: pytest.Config) -> list[str]:
    if not selected(config):
        return []
    return [
        f"contract CLIs pinned in tests/contract/versions.toml: {clis.describe()}",
        f"contract CLI cache: {clis.cache_dir()}",
    ]


def summary(terminalreporter: pytest.TerminalReporter) -> None:
    got = terminalreporter.config.stash.get(INSTALLED, None)
    if got is None:
        return
    terminalreporter.section("contract CLIs")
    terminalreporter.write_line(got.summary())
