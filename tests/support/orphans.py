"""Which stub processes (and their grandchildren) are still running after a test.

Asked of psutil, not of /proc directly, so the answer holds in `nox -s portable` too, where
/proc is hidden and psutil reads the real procfs at a private path (docs/portability.md)."""

from __future__ import annotations

import json
from pathlib import Path

import psutil


def alive(pid: int) -> bool:
    """Running: neither gone nor a zombie waiting for a reaper."""
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


def survivors(stub_home: Path) -> list[int]:
    """Pids of every recorded stub call and spawned grandchild that is still alive."""
    pids: list[int] = []
    log = stub_home / "calls.jsonl"
    if log.exists():
        pids += [json.loads(line)["pid"] for line in log.read_text().splitlines()]
    pids += [int(p.read_text()) for p in stub_home.glob("*.grandchild")]
    return [pid for pid in pids if alive(pid)]
