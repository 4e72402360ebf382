"""The shape every check report shares (preflight, verify): one row per check.

This is a stable, machine-readable interface (`--json`): extend, never rename.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, Literal

Status = Literal["pass", "fail", "warn", "skip"]


@dataclass(frozen=True)
class Check:
    id: str
    status: Status
    detail: str
    remediation: str | None = None
    degradable: bool = False
    seconds: float = 0.0
    # why it failed, for `setup` to pick a remedy (not part of the JSON report): e.g.
    # "missing", "disabled", "unreachable", "slots_off"
    cause: str | None = None

    @property
    def failed(self) -> bool:
        return self.status == "fail"

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "status": self.status,
            "degradable": self.degradable,
            "detail": self.detail,
            "remediation": self.remediation,
            "seconds": round(self.seconds, 3),
        }


Probe = Callable[[], Check | Sequence[Check]]


def timed(probe: Probe) -> list[Check]:
    """Run one probe, stamping each check it returns with the probe's wall time."""
    started = time.monotonic()
    result = probe()
    spent = time.monotonic() - started
    checks = [result] if isinstance(result, Check) else list(result)
    return [replace(c, seconds=spent) if c.seconds == 0.0 else c for c in checks]


def run_concurrently(probes: Iterable[Probe], workers: int = 16) -> list[Check]:
    """Run independent probes at the same time; report in the order they were given."""
    probes = list(probes)
    if not probes:
        return []
    with ThreadPoolExecutor(max_workers=min(workers, len(probes))) as pool:
        results = list(pool.map(timed, probes))
    return [check for group in results for check in group]


def to_json(checks: Iterable[Check]) -> list[dict[str, Any]]:
    return [c.as_json() for c in checks]


__all__ = ["Check", "Probe", "Status", "run_concurrently", "timed", "to_json"]
