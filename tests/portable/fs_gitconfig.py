"""The file-system half of `nox -s portable`: the snapshot, scope, change and verify tests again
under the git settings macOS and WSL give a repository, and with NFD names.

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
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
