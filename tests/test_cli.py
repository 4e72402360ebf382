"""The command line: version, strict flags and usage errors."""

from __future__ import annotations

from pathlib import Path

from plan_build import __version__


def test_version_prints_name_and_version(cli, tmp_path: Path) -> None:
    r = cli("--version", cwd=tmp_path)
    assert r.code == 0
    assert r.stdout.strip() == f"plan-build {__version__}"
