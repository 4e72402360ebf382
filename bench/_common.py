"""Helpers for the benchmarks: medians of wall-clock runs of whole commands."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def wall(
    argv: Sequence[str], *, cwd: Path | None = None, env: Mapping[str, str] | None = None
) -> float:
    started = time.perf_counter()
    subprocess.run(
        list(argv),
        cwd=cwd,
        env=dict(env) if env is not None else None,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    return time.perf_counter() - started


def median_ms(argv: Sequence[str], runs: int, **kwargs: object) -> float:
    wall(argv, **kwargs)  # type: ignore[arg-type]  # warm the page cache
    return statistics.median(wall(argv, **kwargs) for _ in range(runs)) * 1000  # type: ignore[arg-type]


def env_with(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(extra)
    return env
