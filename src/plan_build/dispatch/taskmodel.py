"""TASKS.md's model: the statuses, sections and fields plan-build knows, and what a parsed file
is (tasks with their sections, scope, commands and evidence blocks, and the problems found)."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.dispatch import markdown as md

FILENAME = "TASKS.md"

STATUSES = ("Pending", "In Progress", "Blocked", "Review", "Complete")
PENDING, IN_PROGRESS, BLOCKED, REVIEW, COMPLETE = STATUSES

TASK_ID = re.compile(r"^TASK-\d{3,}$")

# canonical section key -> heading names accepted for it (compared case-insensitively)
SECTIONS: dict[str, tuple[str, ...]] = {
    "objective": ("objective", "goal"),
    "scope": ("scope", "allowed scope", "allowed file scope", "file scope", "files"),
    "context": ("context", "context and interfaces", "interfaces"),
    "prompt": ("prompt", "codex prompt"),
    "acceptance": ("acceptance criteria", "acceptance"),
    "tests": ("tests", "test requirements", "testing"),
    "verification": ("verification", "verification commands", "verify"),
    "coderabbit": ("coderabbit", "coderabbit outcome", "review outcome"),
    "evidence": ("evidence", "completion evidence"),
}
TITLES = {
    "objective": "Objective",
    "scope": "Scope",
    "context": "Context",
    "prompt": "Prompt",
    "acceptance": "Acceptance criteria",
    "tests": "Tests",
    "verification": "Verification",
    "coderabbit": "CodeRabbit",
    "evidence": "Evidence",
}
REQUIRED = ("objective", "scope", "prompt", "acceptance", "tests", "verification")
RECOMMENDED = ("context", "coderabbit", "evidence")


class TaskFileError(PlanBuildError):
    def __init__(self, what: str, fix: str | None = None) -> None:
        super().__init__(what, fix, code=ExitCode.USAGE)


@dataclass(frozen=True)
class Problem:
    line: int
    message: str
    task: str | None = None
    level: Literal["error", "warning"] = "error"

    def human(self, name: str = FILENAME) -> str:
        who = f"{self.task}: " if self.task else ""
        kind = "" if self.level == "error" else "warning: "
        return f"{name}:{self.line}: {kind}{who}{self.message}"

    def as_json(self) -> dict[str, Any]:
        return {"level": self.level, "line": self.line, "task": self.task, "message": self.message}


@dataclass(frozen=True)
class Command:
    """One verification command: run as an argument list, never through a shell."""

    argv: tuple[str, ...]
    text: str
    line: int


@dataclass(frozen=True)
class Section:
    key: str | None  # canonical key, None for a section plan-build does not know
    title: str
    level: int
    line: int
    start: int  # offset of the heading line
    body_start: int
    end: int


@dataclass(frozen=True)
class Block:
    """An evidence block plan-build wrote (begin marker line to end marker line, inclusive)."""

    id: str
    line: int
    start: int
    end: int
    outcome: str | None


@dataclass
class Task:
    id: str
    title: str
    line: int
    level: int
    start: int
    end: int
    status: str | None = None
    status_raw: str | None = None
    status_span: tuple[int, int] | None = None
    status_line: int | None = None
    dependencies: tuple[str, ...] = ()
    dependencies_line: int | None = None
    sections: dict[str, Section] = field(default_factory=dict)
    field_level: int | None = None
    scope: tuple[str, ...] = ()
    scope_lines: tuple[int, ...] = ()
    commands: tuple[Command, ...] = ()
    blocks: tuple[Block, ...] = ()
    bodies: dict[str, str] = field(default_factory=dict)

    def body(self, key: str) -> str:
        return self.bodies.get(key, "")

    @property
    def prompt(self) -> str:
        """The approved prompt: the body of Prompt, unwrapped when it is one fenced block."""
        return md.unwrap_fence(self.body("prompt"))

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "status": self.status,
            "dependencies": list(self.dependencies),
            "scope": list(self.scope),
            "verification": [c.text for c in self.commands],
            "line": self.line,
            "dispatches": len(self.blocks),
        }


@dataclass
class TaskFile:
    path: Path
    text: str
    tasks: list[Task]
    problems: list[Problem]
    newline: str = "\n"

    def get(self, task_id: str) -> Task | None:
        return next((t for t in self.tasks if t.id == task_id), None)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.level == "error"]

    def content_digest(self, task: Task) -> str:
        """A digest of the task's text minus what plan-build owns (status value, evidence)."""
        cuts: list[tuple[int, int]] = [(b.start, b.end) for b in task.blocks]
        if task.status_span:
            cuts.append(task.status_span)
        pieces: list[str] = []
        pos = task.start
        for a, b in sorted(cuts):
            pieces.append(self.text[pos:a])
            pos = b
        pieces.append(self.text[pos : task.end])
        return hashlib.sha256("".join(pieces).encode("utf-8")).hexdigest()
