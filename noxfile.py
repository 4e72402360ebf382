"""Developer sessions: tests, lint, typecheck (default), bench and contract (opt in)."""

from __future__ import annotations

import os
import shutil

import nox

nox.needs_version = ">=2025.2.9"
nox.options.sessions = ["tests", "lint", "typecheck"]
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = True

PYTHON = "3.11"

# Re-run by `portable` with /proc hidden and the subreaper refused (docs/portability.md).
PROCESS_TESTS = (
    "tests/portable",
    "tests/test_proc.py",
    "tests/test_proc_without_psutil.py",
    "tests/test_locks.py",
    "tests/test_kill_debris.py",
    "tests/test_dispatch_lock.py",
    "tests/test_dispatch_misbehaviour.py",
    "tests/test_review_lock.py",
    "tests/test_review_sessions.py",
    "tests/test_review_clear.py",
    "tests/test_snapshot.py",
)


# The sandbox (docs/adr/0190) needs bubblewrap and socat; Claude Code's also wants ripgrep.
SANDBOX_PACKAGES = {"bwrap": "bubblewrap", "socat": "socat", "rg": "ripgrep"}


def sandbox_packages(session: nox.Session) -> None:
    """Install the sandbox's system packages with apt-get when they are missing and this runs as
    root (CI, a fresh Debian machine); elsewhere say what is missing (the tests that need them
    skip, naming it, and preflight fails with the fix)."""
    missing = [pkg for exe, pkg in SANDBOX_PACKAGES.items() if shutil.which(exe) is None]
    if not missing:
        return
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        session.warn(f"missing {' '.join(missing)}: install them (sudo apt-get install ...)")
        return
    env = {"DEBIAN_FRONTEND": "noninteractive"}
    session.run("apt-get", "update", "-q", external=True, env=env, success_codes=[0, 100])
    session.run("apt-get", "install", "-y", "-q", *missing, external=True, env=env)


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """Install plan-build with its test extras and run the default (network-free) suite.

    Tests run on every core (pytest-xdist): each test has its own HOME and temp repos.
    """
    sandbox_packages(session)
    session.install("-e", ".[test]")
    session.run("pytest", "-n", "auto", *session.posargs)


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff over the package, tests, benchmarks and task files; the import layers contract;
    the GitHub Actions workflow against its schema."""
    session.install(".[lint]")
    paths = ("src", "tests", "bench", "tasks.py", "noxfile.py")
    session.run("ruff", "check", *paths)
    session.run("ruff", "format", "--check", *paths)
    session.run("lint-imports", "--no-cache")  # [tool.importlinter] in pyproject.toml
    # the CI definition for macOS and WSL cannot run here: keep it valid against GitHub's
    # workflow schema (vendored in check-jsonschema, no network)
    schema = ("--builtin-schema", "vendor.github-workflows")
    session.run("check-jsonschema", *schema, ".github/workflows/ci.yml")


@nox.session(python=PYTHON)
def typecheck(session: nox.Session) -> None:
    """mypy --strict over the package."""
    session.install("-e", ".[typecheck]")
    session.run("mypy")


@nox.session(python=PYTHON, default=False)
def bench(session: nox.Session) -> None:
    """Benchmarks: print figures beside their reference (not timed tests)."""
    session.install("-e", ".[test]")
    for script in sorted(__import__("pathlib").Path("bench").glob("bench_*.py")):
        session.run("python", str(script), *session.posargs)


@nox.session(python=PYTHON, default=False)
def portable(session: nox.Session) -> None:
    """The macOS/WSL fallbacks, proved on Linux by taking the Linux facilities away
    (docs/portability.md): the process, lock, orphan and snapshot tests with /proc hidden and
    the subreaper refused, then the file-system tests under macOS and WSL git settings."""
    sandbox_packages(session)
    session.install("-e", ".[test]")
    # --- processes without /proc and without a subreaper (tests/portable/) ---
    # A private mount namespace with an empty tmpfs over /proc and prctl's subreaper calls
    # refused by seccomp; psutil and a `ps` stand-in read the real procfs at a private path, as
    # macOS's psutil and ps ask the kernel (tests/portable/inside.py says how).
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        session.warn("skipped the process half: it needs root and unshare(1) (a mount namespace)")
    else:
        session.run(
            "unshare", "--mount", "--fork", "python", "tests/portable/inside.py",
            "-n", "2", "-p", "no:randomly", *PROCESS_TESTS, external=True,
        )  # fmt: skip
    # --- file systems: core.ignorecase, NFD names, core.autocrlf, core.fileMode ---
    # the snapshot, scope, change and verify tests under macOS's and WSL's git settings
    session.run("python", "tests/portable/fs_gitconfig.py", "-n", "auto", *session.posargs)


@nox.session(python=PYTHON, default=False)
def browser(session: nox.Session) -> None:
    """The HTML report in headless Chromium (Debian's `chromium`, installed with apt-get when
    missing; the test skips, saying why, only where it cannot be installed)."""
    if not os.path.exists("/usr/bin/chromium") and shutil.which("apt-get"):
        env = {"DEBIAN_FRONTEND": "noninteractive"}
        session.run("apt-get", "update", "-q", external=True, env=env, success_codes=[0, 100])
        session.run(
            "apt-get", "install", "-y", "-q", "chromium",
            external=True, env=env, success_codes=[0, 100],
        )  # fmt: skip
    session.install("-e", ".[test,browser]")
    session.run("pytest", "-m", "browser", "-n", "0", *session.posargs)


@nox.session(python=PYTHON, default=False)
def contract(session: nox.Session) -> None:
    """The contract suite against the real claude and codex CLIs (installs them with npm)."""
    sandbox_packages(session)
    session.install("-e", ".[test]")
    # The agents' HOME lives under pytest's base folder. Codex (with the system's bubblewrap)
    # refuses to make its sandbox helper in a Codex home under /tmp or $TMPDIR, and then every
    # command it runs fails: the base folder sits outside them, as a user's home does.
    base = os.path.join(os.path.expanduser("~"), ".cache", "plan-build-contract", "basetemp")
    session.run("pytest", "-m", "contract", f"--basetemp={base}", *session.posargs)
