"""The command line: version, strict flags and usage errors (exit 2, nothing written)."""

from __future__ import annotations

from pathlib import Path

import pytest

from plan_build import __version__
from tests.support.gitcmd import git


def test_version_prints_name_and_version(cli, tmp_path: Path) -> None:
    r = cli("--version", cwd=tmp_path)
    assert r.code == 0
    assert r.stdout.strip() == f"plan-build {__version__}"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["plan", "--yolo", "--yolo"], "--yolo was given more than once"),
        (["plan", "--dry-run", "--dry-run"], "--dry-run was given more than once"),
        (["architect", "--new", "--new"], "--new was given more than once"),
        (["plan", "--brainstorm"], "unknown option --brainstorm"),
        (["plan", "--writing-plan"], "unknown option --writing-plan"),
        (["plan", "--v2"], "unknown option --v2"),
        (["plan", "--new"], "unknown option --new"),
        (["architect", "--prompt"], "unknown option --prompt"),
        (["plan", "extra"], "unknown command or argument extra"),
        (["plan", "preflight"], "run one command at a time"),
        (["preflight", "--mode", "fancy"], "--mode must be standard or architect"),
    ],
)
def test_bad_command_lines_are_usage_errors(cli, repo: Path, args, message) -> None:
    # a parse error points at the help; a bad value names the one command that works instead
    fix = (
        "  fix: plan-build preflight --mode architect\n"
        if "--mode" in args
        else "  fix: see 'plan-build --help' or 'plan-build <command> --help'\n"
    )
    before = git(repo, "status", "--porcelain", "--ignored")
    r = cli(*args, cwd=repo, input="some request\nEOF\n")
    assert r.code == 2, r.stderr
    assert message in r.stderr
    assert r.stderr.endswith(fix), r.stderr
    assert "Traceback" not in r.stderr
    assert git(repo, "status", "--porcelain", "--ignored") == before


def test_help_lists_the_public_commands(cli, tmp_path: Path) -> None:
    r = cli("--list", cwd=tmp_path)
    assert r.code == 0
    for name in ("plan", "architect", "preflight", "identity", "env"):
        assert f"  {name} " in r.stdout


def test_inv_in_a_checkout_runs_the_same_program(tmp_path: Path) -> None:
    """`inv plan --yolo --yolo` in a checkout is the same usage error as plan-build's."""
    import subprocess
    import sys

    from tests.support.paths import ROOT

    inv = Path(sys.executable).parent / "inv"
    if not inv.exists():
        pytest.fail("invoke's `inv` script is not installed beside the test interpreter")
    r = subprocess.run(
        [str(inv), "plan", "--yolo", "--yolo"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert r.returncode == 2
    assert "--yolo was given more than once" in r.stderr
    r = subprocess.run([str(inv), "--list"], cwd=ROOT, capture_output=True, text=True, check=False)
    assert r.returncode == 0
    assert "  architect " in r.stdout


def test_startup_loads_no_heavy_module(tmp_path: Path) -> None:
    """`plan-build --version` must stay close to `import invoke` (bench/bench_startup.py):
    templates, YAML, psutil, the secret scanner and the steps load only when a task runs."""
    import subprocess
    import sys

    code = (
        "import sys, runpy\n"
        "sys.argv = ['plan-build', '--version']\n"
        "try:\n"
        "    runpy.run_module('plan_build', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(' '.join(sorted(sys.modules)))\n"
    )
    out = (
        subprocess.run(
            [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True
        )
        .stdout.split("\n")[-2]
        .split()
    )
    # (yaml is not listed: `import invoke` itself loads it, so it is in the reference figure)
    heavy = {
        "jinja2",
        "psutil",
        "detect_secrets",
        "urllib.request",
        "plan_build.delivery.verify",
        "plan_build.delivery.commit",
        "plan_build.dispatch.runner",
        "plan_build.review.rounds",
        "plan_build.release.bundle",
        "plan_build.startup.enhance",
        "plan_build.startup.preflight",
    }
    assert sorted(heavy & set(out)) == []
