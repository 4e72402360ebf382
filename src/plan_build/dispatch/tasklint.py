"""What a task plan must satisfy beyond parsing: each task's fields and required sections,
its scope patterns and commands, dependencies that exist and form no cycle; more than one task In
Progress is a warning (only a wave runs several at once)."""

from __future__ import annotations

from typing import Literal

from plan_build.dispatch import scope as scopes
from plan_build.dispatch.taskmodel import (
    COMPLETE,
    IN_PROGRESS,
    RECOMMENDED,
    REQUIRED,
    REVIEW,
    STATUSES,
    TITLES,
    Problem,
    Task,
    TaskFile,
)


def lint(tf: TaskFile) -> None:
    """Add the file's problems beyond parsing: missing fields and sections, bad scope
    patterns, unknown or cyclic dependencies, more than one task In Progress."""
    problems = tf.problems
    if not tf.tasks:
        problems.append(
            Problem(1, "no tasks found (a task is a heading like `## TASK-001: Title`)")
        )
        return
    first: dict[str, Task] = {}
    for task in tf.tasks:
        if task.id in first:
            problems.append(
                Problem(
                    task.line, f"duplicate task id (first at line {first[task.id].line})", task.id
                )
            )
        else:
            first[task.id] = task
        problems.extend(_lint_task(task, problems))
    for task in tf.tasks:
        problems.extend(_lint_dependencies(task, first))
    for cycle in _cycles(first):
        head = first[cycle[0]]
        problems.append(
            Problem(
                head.dependencies_line or head.line,
                "dependency cycle: " + " → ".join([*cycle, cycle[0]]),
                head.id,
            )
        )
    running = [t for t in tf.tasks if t.status == IN_PROGRESS]
    if len(running) > 1:
        ids = ", ".join(t.id for t in running)
        for t in running:
            problems.append(
                Problem(
                    t.status_line or t.line,
                    f"more than one task is In Progress ({ids}); only a wave "
                    "(plan-build dispatch --wave) runs several at once",
                    t.id,
                    "warning",
                )
            )


def _lint_task(task: Task, earlier: list[Problem]) -> list[Problem]:
    out: list[Problem] = []
    if not task.title:
        out.append(Problem(task.line, "the heading has no title after the id", task.id))
    if task.status_line is None:
        out.append(
            Problem(task.line, "no Status line (add `Status: Pending` under the heading)", task.id)
        )
    elif task.status is None:
        out.append(
            Problem(
                task.status_line,
                f"unknown status {task.status_raw!r} (use one of: {', '.join(STATUSES)})",
                task.id,
            )
        )
    if task.dependencies_line is None:
        out.append(
            Problem(
                task.line, "no Dependencies line (add `Dependencies: none` or task ids)", task.id
            )
        )
    kinds: tuple[tuple[tuple[str, ...], Literal["error", "warning"]], ...] = (
        (REQUIRED, "error"),
        (RECOMMENDED, "warning"),
    )
    for keys, level in kinds:
        missing = [f'"{TITLES[k]}"' for k in keys if k not in task.sections]
        if missing:
            noun = "section" if len(missing) == 1 else "sections"
            out.append(Problem(task.line, f"no {', '.join(missing)} {noun}", task.id, level))
    for key in REQUIRED:
        if key in task.sections and not task.body(key).strip():
            out.append(Problem(task.sections[key].line, f'"{TITLES[key]}" is empty', task.id))
    return out + _lint_scope_and_commands(task, earlier)


def _lint_scope_and_commands(task: Task, earlier: list[Problem]) -> list[Problem]:
    out: list[Problem] = []
    if "scope" in task.sections:
        if not task.scope and task.body("scope").strip():
            out.append(
                Problem(
                    task.sections["scope"].line,
                    "Scope lists no paths (one path or glob per bullet)",
                    task.id,
                )
            )
        for pattern, line in zip(task.scope, task.scope_lines, strict=True):
            why = scopes.problem(pattern)
            if why:
                out.append(Problem(line, why, task.id))
    already = any(p.task == task.id and "verification command" in p.message for p in earlier)
    if task.body("verification").strip() and not task.commands and not already:
        out.append(
            Problem(
                task.sections["verification"].line,
                "no verification commands found (put them in a fenced code block, "
                "one command per line)",
                task.id,
            )
        )
    return out


def _lint_dependencies(task: Task, tasks: dict[str, Task]) -> list[Problem]:
    out: list[Problem] = []
    line = task.dependencies_line or task.line
    for dep in task.dependencies:
        if dep == task.id:
            out.append(Problem(line, "depends on itself", task.id))
        elif dep not in tasks:
            out.append(Problem(line, f"depends on {dep}, which does not exist", task.id))
        elif task.status in (REVIEW, COMPLETE) and tasks[dep].status != COMPLETE:
            out.append(
                Problem(
                    line,
                    f"is {task.status} but its dependency {dep} is "
                    f"{tasks[dep].status or 'unknown'}",
                    task.id,
                    "warning",
                )
            )
    return out


def _cycles(tasks: dict[str, Task]) -> list[list[str]]:
    found: list[list[str]] = []
    seen_sets: set[frozenset[str]] = set()
    state: dict[str, int] = {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        stack.append(node)
        for dep in tasks[node].dependencies:
            if dep not in tasks or dep == node:
                continue
            if state.get(dep) == 1:
                cycle = stack[stack.index(dep) :]
                key = frozenset(cycle)
                if key not in seen_sets:
                    seen_sets.add(key)
                    found.append(cycle)
            elif state.get(dep) is None:
                visit(dep, stack)
        stack.pop()
        state[node] = 2

    for node in tasks:
        if state.get(node) is None:
            visit(node, [])
    return found
