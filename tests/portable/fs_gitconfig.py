"""The file-system half of `nox -s portable`: the snapshot, scope, change and verify tests again
under the git settings macOS and WSL give a repository, and with NFD names; then the dispatch
tests of ignored paths with a BSD-like `find` first on PATH (no -newerct, no -printf), so the
portable walk answers them.

Every git call in those tests (the fixtures' and plan-build's) sees the settings through
GIT_CONFIG_COUNT / GIT_CONFIG_KEY_n / GIT_CONFIG_VALUE_n, which git reads after every config
file; the test fixtures set only GIT_CONFIG_GLOBAL and GIT_CONFIG_NOSYSTEM, so nothing scrubs
them. NFD names: the macOS run puts every temporary repository under a directory whose name is
decomposed ("cafe" + U+0301), so each path plan-build compares with git's output carries one.

    python tests/portable/fs_gitconfig.py [pytest args...]     (e.g. -n 0, -x)

Exit status: the first failing run's, else 0. Run from the repository root.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import unicodedata
from pathlib import Path

TESTS = [
    "tests/test_snapshot.py",
    "tests/test_snapshot_walk.py",
    "tests/test_statusindex.py",
    "tests/test_scope.py",
    "tests/test_fs_names.py",
    "tests/test_change.py",
    "tests/test_verify.py",
    "tests/test_symlink_escape.py",
]

NFD_DIR = unicodedata.normalize("NFD", "pb-café")

# name -> (git settings, tests whose promise is the Linux default and so does not hold there)
RUNS: dict[str, tuple[dict[str, str], list[str]]] = {
    "macOS (case-folding, precomposed Unicode, NFD paths)": (
        {"core.ignorecase": "true", "core.precomposeunicode": "true"},
        [],
    ),
    "WSL on /mnt/c (CRLF conversion, no executable bit)": (
        {"core.autocrlf": "true", "core.fileMode": "false"},
        # an exec-bit change is invisible to git when core.fileMode=false, by design
        ["tests/test_change.py::test_exec_bit_symlink_and_rename_show_up"],
    ),
}


# the dispatch tests whose answer comes from the ignored-path snapshot's ctime scan
IGNORED_PATH_TESTS = [
    "tests/test_snapshot_walk.py",  # GNU find's side of the comparison skips itself here
    "tests/test_dispatch_misbehaviour.py::test_a_change_to_an_ignored_path_outside_the_scope_blocks",
    "tests/test_dispatch_misbehaviour.py::test_an_ignored_path_inside_the_scope_is_fine",
    "tests/test_dispatch_misbehaviour.py::test_check_caches_are_by_products_whether_ignored_or_not",
    "tests/test_dispatch_misbehaviour.py::test_an_ignored_tree_edit_shows_despite_a_forged_mtime",
]
BSD_FIND = """#!/bin/sh
for a in "$@"; do
  case "$a" in -printf|-newerct) echo "find: $a: unknown primary or operator" >&2; exit 1;; esac
done
exec {real} "$@"
"""


def bsd_find_path(tmp: Path) -> str:
    """PATH with a find that refuses GNU's primaries as macOS's does."""
    real = shutil.which("find")
    if real is None:
        raise SystemExit("no find on PATH")
    shim = tmp / "bsd-find" / "find"
    shim.parent.mkdir()
    shim.write_text(BSD_FIND.format(real=real))
    shim.chmod(0o755)
    return f"{shim.parent}{os.pathsep}{os.environ.get('PATH', '')}"


def git_config_env(settings: dict[str, str]) -> dict[str, str]:
    env = dict(os.environ)
    env["GIT_CONFIG_COUNT"] = str(len(settings))
    for i, (key, value) in enumerate(settings.items()):
        env[f"GIT_CONFIG_KEY_{i}"] = key
        env[f"GIT_CONFIG_VALUE_{i}"] = value
    return env


def main(extra: list[str]) -> int:
    status = 0
    for name, (settings, deselect) in RUNS.items():
        env = git_config_env(settings)
        with tempfile.TemporaryDirectory(prefix="pb-portable-") as tmp:
            base = Path(tmp) / NFD_DIR if "NFD" in name else Path(tmp) / "base"
            argv = [sys.executable, "-m", "pytest", "-q", "--basetemp", str(base), *TESTS]
            argv += [f"--deselect={d}" for d in deselect] + extra
            print(f"--- {name}: {' '.join(f'{k}={v}' for k, v in settings.items())}", flush=True)
            code = subprocess.run(argv, env=env, check=False).returncode
        status = status or code
    with tempfile.TemporaryDirectory(prefix="pb-portable-") as tmp:
        env = {**os.environ, "PATH": bsd_find_path(Path(tmp))}
        argv = [sys.executable, "-m", "pytest", "-q", *IGNORED_PATH_TESTS, *extra]
        print("--- macOS find (BSD: no -newerct, no -printf): the portable walk", flush=True)
        code = subprocess.run(argv, env=env, check=False).returncode
    return status or code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
