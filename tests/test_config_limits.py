""".plan-build.yaml: every bad value is one message naming the file, the line and the fix,
found quickly, before anything runs: NaN/infinite/huge timeouts, NUL bytes, deep nesting,
alias amplification and oversized files."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from plan_build.core import config, gitrepo
from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.delivery import baseline


def load_error(repo: Path, text: str | bytes) -> PlanBuildError:
    target = repo / config.FILENAME
    if isinstance(text, bytes):
        target.write_bytes(text)
    else:
        target.write_text(text, encoding="utf-8")
    with pytest.raises(PlanBuildError) as info:
        config.load(repo)
    err = info.value
    assert err.code == ExitCode.USAGE
    assert config.FILENAME in (err.fix or "")
    return err


def command(timeout: str) -> str:
    return f"verify:\n  commands:\n    - name: t\n      argv: [x]\n      timeout: {timeout}\n"


@pytest.mark.parametrize(
    "value", [".nan", ".NaN", ".inf", "-.inf", "1.0e+12", "1000000000000", "0", "-5", "86401"]
)
def test_timeouts_must_be_finite_and_bounded(repo: Path, value: str) -> None:
    err = load_error(repo, command(value))
    assert err.what.startswith(f"{repo / config.FILENAME}:5: verify.commands[0].timeout")
    assert "between 0 and 86400 seconds" in err.what


@pytest.mark.parametrize("key", ["enhance:\n  timeout", "review:\n  codex_timeout"])
def test_every_timeout_key_is_bounded(repo: Path, key: str) -> None:
    err = load_error(repo, f"{key}: .nan\n")
    assert ":2: " in err.what
    assert "between 0 and 86400 seconds" in err.what


def test_a_bounded_timeout_is_accepted(repo: Path) -> None:
    (repo / config.FILENAME).write_text(command("86400"))
    assert config.load(repo).get("verify.commands")[0]["timeout"] == 86400


def test_a_nul_byte_in_a_word_is_refused_with_its_line(repo: Path) -> None:
    err = load_error(repo, 'verify:\n  commands:\n    - name: t\n      argv: [ok, "a\\0b"]\n')
    assert err.what.startswith(f"{repo / config.FILENAME}:4: verify.commands[0].argv[1]")
    assert "NUL" in err.what


def test_deep_nesting_is_refused_not_a_recursion_error(repo: Path) -> None:
    err = load_error(repo, "verify: " + "[" * 5000 + "]" * 5000 + "\n")
    assert f"{config.FILENAME}:1:" in err.what
    assert f"nested deeper than {config.MAX_DEPTH} levels" in err.what


def test_alias_amplification_is_refused_quickly(repo: Path) -> None:
    words = ", ".join(f"w{i}" for i in range(2500))
    commands = "\n".join(f"    - {{name: c{i}, argv: *w}}" for i in range(1, 2500))
    text = f"verify:\n  commands:\n    - {{name: c0, argv: &w [{words}]}}\n{commands}\n"
    assert len(text) < 100_000  # far below the size cap: only counting stops it
    started = time.monotonic()
    err = load_error(repo, text)
    assert time.monotonic() - started < 5
    assert f"more than {config.MAX_NODES:,} values" in err.what
    assert "aliases counted" in err.what


def test_an_oversized_file_is_refused_before_parsing(repo: Path) -> None:
    line = "# " + "x" * 98 + "\n"
    text = "verify:\n  commands: []\n" + line * (21 * 1024 * 1024 // len(line))
    started = time.monotonic()
    err = load_error(repo, text)
    assert time.monotonic() - started < 2
    assert "larger than 1 MiB" in err.what
    assert err.what.startswith(f"{repo / config.FILENAME}:")


def test_the_cli_reports_a_nan_timeout_without_a_traceback(repo: Path, cli) -> None:
    baseline.capture(gitrepo.discover(repo), session_id="s")
    (repo / config.FILENAME).write_text(command(".nan").replace("[x]", f"[{sys.executable}]"))
    r = cli("verify", cwd=repo)
    assert r.code == ExitCode.USAGE, r.stderr
    assert "Traceback" not in r.stderr
    assert ".plan-build.yaml:5: verify.commands[0].timeout" in r.stderr
    assert "fix:" in r.stderr
