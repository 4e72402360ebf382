"""The prompts a dispatch gives Codex (the task, then each correction) and its argv.

A first prompt that carries what looks like a credential is refused (the user must remove it
from TASKS.md); a correction quotes check output, so credentials in it are withheld instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from plan_build.core import redact
from plan_build.core.errors import ExitCode, PlanBuildError, usage
from plan_build.core.render import render
from plan_build.dispatch import memslot, taskfile
from plan_build.dispatch import recipe as recipes
from plan_build.dispatch.evidence import tail
from plan_build.dispatch.memscope import project_identity
from plan_build.dispatch.results import SCOPE_MARKER, Attempt, VerifyRun
from plan_build.dispatch.taskmodel import (
    BLOCKED,
    COMPLETE,
    IN_PROGRESS,
    PENDING,
    REVIEW,
    Task,
    TaskFile,
)

MAX_PROMPT_BYTES = 120_000  # one argv element may not exceed 128 KiB on Linux
PROMPT_TAIL_CHARS = 6_000
PROMPT_TAIL_LINES = 120
SUMMARY_ITEMS = 8


def _listing(tasks: list[Task]) -> str:
    shown = [f"{t.id} {t.title}".strip() for t in tasks[:SUMMARY_ITEMS]]
    if len(tasks) > SUMMARY_ITEMS:
        shown.append(f"and {len(tasks) - SUMMARY_ITEMS} more")
    return "; ".join(shown)


def checkpoint_summary(
    tf: TaskFile, current: Task, alongside: frozenset[str] = frozenset()
) -> dict[str, str]:
    """`alongside`: the tasks of the same wave, in flight beside this one whatever their
    Status says yet (never "next")."""
    others = [t for t in tf.tasks if t.id != current.id]
    nxt = next((t for t in others if t.status == PENDING and t.id not in alongside), None)
    flying = [t for t in others if t.status in (IN_PROGRESS, REVIEW) or t.id in alongside]
    return {
        "complete": _listing([t for t in others if t.status == COMPLETE]),
        "in_flight": _listing(flying),
        "blocked": _listing([t for t in others if t.status == BLOCKED]),
        "next": f"{nxt.id} {nxt.title}" if nxt else "",
    }


def context(
    tf: TaskFile,
    task: Task,
    *,
    root: Path,
    env: Mapping[str, str],
    mode: str,
    slot: memslot.SlotRead,
    alongside: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """What the task prompt template is rendered from."""
    spec = root / "SPEC.md"
    return {
        "project": project_identity(root, env),
        "memory_mode": mode,
        "slot": {"state": slot.state, "content": slot.content, "reason": slot.reason},
        "tasks_ref": taskfile.FILENAME,
        "spec_ref": "SPEC.md" if spec.is_file() else None,
        "task": {
            "id": task.id,
            "title": task.title,
            "objective": task.body("objective").strip(),
            "context": task.body("context").strip(),
            "prompt": task.prompt.strip(),
            "acceptance": task.body("acceptance").strip(),
            "tests": task.body("tests").strip(),
        },
        "commands": [c.text for c in task.commands],
        "scope": list(task.scope),
        "scope_marker": SCOPE_MARKER,
        "checkpoint": checkpoint_summary(tf, task, alongside),
        "previous": {
            "count": len(task.blocks),
            "last_outcome": task.blocks[-1].outcome if task.blocks else None,
        },
    }


def correction_context(
    base: Mapping[str, Any],
    attempts: Sequence[Attempt],
    correction: int,
    max_corrections: int,
    failures: list[VerifyRun],
) -> dict[str, Any]:
    """The task context plus what the correction must fix: every file changed so far and the
    failed checks' output."""
    changed: list[str] = []
    for a in attempts:
        changed.extend(p for p in a.changed if p not in changed)
    return {
        **base,
        "correction": correction,
        "max_corrections": max_corrections,
        "changed": changed,
        "failures": [
            {
                "command": f.text,
                "exit": f.returncode,
                "timed_out": f.timed_out,
                "timeout": f.timeout,
                "output": tail(f.output, PROMPT_TAIL_LINES, PROMPT_TAIL_CHARS),
            }
            for f in failures
        ],
    }


def render_prompt(
    templates: Path,
    name: str,
    context: Mapping[str, Any],
    *,
    env: Mapping[str, str],
    task_id: str,
    refuse: bool,
) -> str:
    """The rendered prompt; `refuse` makes a credential in it an error instead of withheld."""
    text = render(templates, name, context)
    if refuse:
        findings = redact.scan(text, env)
        if findings:
            where = ", ".join(f"prompt line {f.line} ({f.kind})" for f in findings[:5])
            raise PlanBuildError(
                f"the prompt for {task_id} contains what looks like a credential: {where}",
                "remove the value from TASKS.md (name the variable instead) or from the "
                "workflow_status slot, then dispatch again",
                code=ExitCode.USAGE,
            )
    else:
        text, _ = redact.redact(text, env)
    if len(text.encode("utf-8")) > MAX_PROMPT_BYTES:
        raise usage(
            f"the prompt for {task_id} is {len(text.encode()) // 1024} KiB; "
            f"Codex takes at most {MAX_PROMPT_BYTES // 1024} KiB as an argument",
            "split the task or shorten its prompt and context",
        )
    return text


def codex_argv(
    recipe: recipes.Recipe, role: str, out: Path, prompt: str, extra: Sequence[str] = ()
) -> list[str]:
    """`extra`: a wave task's own sandbox settings, after the recipe's."""
    flags = [*recipe.codex_flags(role), *extra]
    return ["codex", "exec", *flags, "--json", "-o", str(out), prompt]
