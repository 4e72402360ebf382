"""Machine output: every `--json` is written one way (indented, keys sorted, ASCII only, so any
terminal encoding can carry it and two runs compare line by line)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

from plan_build.core import jsonout


def test_the_writer_sorts_keys_escapes_non_ascii_and_ends_with_a_newline() -> None:
    out = io.StringIO()
    jsonout.write(out, {"b": "é", "a": [1, {"d": 2, "c": 3}]})
    text = out.getvalue()
    assert text.isascii()
    assert text.endswith("}\n")
    assert text == json.dumps({"a": [1, {"c": 3, "d": 2}], "b": "é"}, indent=2) + "\n"
    assert json.loads(text) == {"a": [1, {"c": 3, "d": 2}], "b": "é"}


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    return subprocess.run(
        [sys.executable, "-m", "plan_build", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )


def test_json_commands_print_the_same_way(tmp_path: Path, private_home: Path) -> None:
    """`env` printed keys in code order and `release` sorted them; now both sort, and both
    survive an ASCII-only stdout."""
    where = tmp_path / "dépôt"
    where.mkdir()
    outputs = [run(["env", "--json"], where), run(["release", "--json"], where)]
    for r in outputs:
        assert r.returncode == 0, r.stderr
        assert r.stdout.isascii()
        data = json.loads(r.stdout)
        assert r.stdout == json.dumps(data, indent=2, sort_keys=True) + "\n"
