"""What a `setup` step is, and the Planner every step planner adds to.

A Step names the check it answers, what it changes and the exact command; one with an action
runs after consent, one without is the user's to do. The Planner holds what planning reads
(the session, the readiness report, the loaded config) and runs the few read-only queries.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from plan_build.core import proc
from plan_build.core.checks import Check
from plan_build.core.context import Session
from plan_build.core.errors import PlanBuildError
from plan_build.startup import preflight

NPM_TIMEOUT = 900.0
PLUGIN_TIMEOUT = 180.0  # a marketplace add clones a Git repository
QUERY_TIMEOUT = 30.0
TAIL = 5


@dataclass(frozen=True)
class Options:
    mode: preflight.Mode = "standard"
    dry_run: bool = False
    yes: bool = False
    json: bool = False
    latest: bool = False


@dataclass(frozen=True)
class Result:
    ok: bool
    detail: str
    tail: tuple[str, ...] = ()


@dataclass
class Step:
    """One change setup can make (`action` set) or one thing only the user can do."""

    id: str
    check: str  # the preflight check it addresses
    title: str
    command: str  # exactly what runs (or what to run, for the user's own items)
    changes: tuple[str, ...] = ()
    needs: tuple[str, ...] = ()
    remedy: str = ""  # printed when the step fails
    # printed instead when the command succeeded and the recheck found a problem; None: the
    # same remedy, "": none (the problem says what to do; "read the error" would be untrue)
    remedy_if_done: str | None = None
    action: Callable[[], Result] | None = None
    verify: Callable[[], str | None] | None = None  # the problem after a run, or None

    @property
    def runs(self) -> bool:
        return self.action is not None

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "check": self.check,
            "title": self.title,
            "command": self.command,
            "changes": list(self.changes),
            "needs": list(self.needs),
            "runs": self.runs,
        }


# lines that never say why a command failed: git's override warning, npm's upgrade notices
_NOISE = ("WARNING: proceeding, even though", "npm notice")


def tail(*texts: str, lines: int = TAIL) -> tuple[str, ...]:
    """The last lines of a command's output, without Rust backtraces and blank lines."""
    kept: list[str] = []
    for text in texts:
        for line in text.split("Stack backtrace:")[0].splitlines():
            if line.strip() and not line.startswith(_NOISE):
                kept.append(line.rstrip())
    return tuple(kept[-lines:])


def _message(stdout: str) -> str | None:
    """The `message` of Claude's one-line `--json` result, when there is one."""
    last = (stdout.strip().splitlines() or [""])[-1]
    try:
        data = json.loads(last)
    except json.JSONDecodeError:
        return None
    message = data.get("message") if isinstance(data, dict) else None
    return message.splitlines()[0] if isinstance(message, str) and message else None


@dataclass
class Planner:
    session: Session
    report: preflight.Report
    opts: Options
    config: Any = None
    steps: list[Step] = field(default_factory=list)
    covered: set[str] = field(default_factory=set)

    @property
    def env(self) -> dict[str, str]:
        return self.session.env

    @property
    def cwd(self) -> Path:
        return self.report.repo.root if self.report.repo else self.session.cwd

    def failed(self, check_id: str) -> Check | None:
        return next((c for c in self.report.checks if c.id == check_id and c.failed), None)

    def short(self, path: Path | str) -> str:
        text, home = str(path), str(self.session.home).rstrip("/")
        return "~" + text[len(home) :] if home and text.startswith(home + "/") else text

    def add(self, step: Step) -> str:
        self.steps.append(step)
        self.covered.add(step.check)
        return step.id

    def manual(self, check: str, title: str, command: str) -> None:
        self.add(
            Step(id=f"you.{check}.{len(self.steps)}", check=check, title=title, command=command)
        )

    def argv_step(
        self,
        step_id: str,
        check: str,
        title: str,
        argv: Sequence[str],
        *,
        changes: tuple[str, ...],
        needs: tuple[str, ...],
        remedy: str,
        verify: Callable[[], str | None],
    ) -> str:
        """Add a step that runs `argv` exactly as its plan line shows it; returns its id."""
        return self.add(
            Step(
                id=step_id,
                check=check,
                title=title,
                command=proc.quote(argv),
                changes=changes,
                needs=needs,
                remedy=remedy,
                action=partial(self.run_argv, list(argv), PLUGIN_TIMEOUT),
                verify=verify,
            )
        )

    def run_argv(self, argv: Sequence[str], timeout: float) -> Result:
        r = proc.run(argv, cwd=self.cwd, env=self.env, timeout=timeout)
        lines = tail(r.stdout, r.stderr)
        if r.ok:
            said = _message(r.stdout)
            return Result(True, "done" + (f" · {said}" if said else ""), lines)
        return Result(False, f"exited {r.returncode}", lines)

    def query(self, argv: Sequence[str]) -> Any:
        """A `--json` listing, or None when it cannot be had (the manual remedy then applies)."""
        try:
            r = proc.run(argv, cwd=self.cwd, env=self.env, timeout=QUERY_TIMEOUT)
            return json.loads(r.stdout) if r.ok else None
        except (PlanBuildError, json.JSONDecodeError):
            return None
