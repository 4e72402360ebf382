"""The stub agent CLIs a test puts first on PATH (the `stubs` fixture): their rules and calls."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.paths import ROOT

STUB_TOOLS = ("claude", "codex", "coderabbit", "auggie")


@dataclass
class Stubs:
    bin: Path
    home: Path

    def rule(self, tool: str, *rules: dict[str, Any]) -> None:
        """Answer `tool`'s calls with these rules first (see tests/support/stubtool.py)."""
        path = self.home / f"{tool}.json"
        existing = json.loads(path.read_text()) if path.exists() else []
        path.write_text(json.dumps([*rules, *existing]))

    def calls(self, tool: str | None = None) -> list[dict[str, Any]]:
        log = self.home / "calls.jsonl"
        if not log.exists():
            return []
        rows = [json.loads(line) for line in log.read_text().splitlines()]
        return [r for r in rows if tool is None or r["tool"] == tool]

    def remove(self, tool: str) -> None:
        (self.bin / tool).unlink()


def install(bin_dir: Path, home: Path) -> Stubs:
    """Write one stub executable per agent CLI into `bin_dir`, recording under `home`."""
    bin_dir.mkdir()
    home.mkdir()
    for tool in STUB_TOOLS:
        exe = bin_dir / tool
        exe.write_text(
            f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(ROOT)!r})\n"
            f"from tests.support.stubtool import main\nmain({tool!r})\n"
        )
        exe.chmod(0o755)
    return Stubs(bin_dir, home)


__all__ = ["STUB_TOOLS", "Stubs", "install"]
