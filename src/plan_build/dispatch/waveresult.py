"""What a wave did: one record per task (its state for the progress line, its outcome, what
was applied, its kept worktree, its times) and the wave's result (exit code, `--json`)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from plan_build.core.errors import ExitCode
from plan_build.dispatch import waveplan
from plan_build.dispatch.inflight import InFlight
from plan_build.dispatch.results import DispatchResult


@dataclass
class TaskRun:
    """One task of the wave, as the progress lines and the summary show it."""

    task_id: str
    state: str = "waiting"
    started: float = field(default_factory=time.monotonic)
    flight: InFlight | None = None
    result: DispatchResult | None = None
    outcome: str = ""  # applied, conflict, blocked, interrupted, refused
    why: str = ""
    worktree: str = ""
    applied: list[str] = field(default_factory=list)
    seconds: float = 0.0  # the task's whole time in the wave
    worktree_seconds: float = 0.0  # creating its worktree

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"task": self.task_id, "outcome": self.outcome, "why": self.why}
        if self.result is not None:
            out.update(status=self.result.status, reason=self.result.reason)
        out["applied"] = self.applied
        out["worktree"] = self.worktree or None
        codex_s = sum(a.codex_seconds for a in self.flight.attempts) if self.flight else 0.0
        out["seconds"] = {
            "total": round(self.seconds, 3),
            "worktree": round(self.worktree_seconds, 3),
            "codex": round(codex_s, 3),
        }
        return out


@dataclass
class WaveResult:
    wave_id: str
    plan: waveplan.WavePlan
    runs: list[TaskRun]
    resumed: bool = False
    dry_run: bool = False

    @property
    def exit_code(self) -> ExitCode:
        if self.dry_run or all(r.outcome == "applied" for r in self.runs):
            return ExitCode.OK
        return ExitCode.BLOCKED

    def as_json(self) -> dict[str, Any]:
        return {
            "wave": self.wave_id or None,
            "resumed": self.resumed,
            "dry_run": self.dry_run,
            "plan": self.plan.as_json(),
            "tasks": [r.as_json() for r in self.runs],
        }


__all__ = ["TaskRun", "WaveResult"]
