"""Which stub processes (and their grandchildren) are still running after a test, per /proc."""

from __future__ import annotations

import json
from pathlib import Path


def alive(pid: int) -> bool:
    """Running: neither gone nor a zombie waiting for a reaper."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def survivors(stub_home: Path) -> list[int]:
    """Pids of every recorded stub call and spawned grandchild that is still alive."""
    pids: list[int] = []
    log = stub_home / "calls.jsonl"
    if log.exists():
        pids += [json.loads(line)["pid"] for line in log.read_text().splitlines()]
    pids += [int(p.read_text()) for p in stub_home.glob("*.grandchild")]
    return [pid for pid in pids if alive(pid)]
