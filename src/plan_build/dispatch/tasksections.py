"""The bodies of a task's sections in TASKS.md, read: the Scope's paths and globs, the
Verification's commands (one per line, no shell: shell syntax is a problem to fix, not a
command to run) and plan-build's evidence blocks with the outcome each records.

`taskfile.parse` finds the sections and calls these on each task's own lines.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator

from plan_build.dispatch import markdown as md
from plan_build.dispatch.taskmodel import Block, Command, Problem, Section, Task

SHELL_TOKENS = {"|", "||", "&&", ";", "&", ">", ">>", "<", "<<", "2>", "2>&1", "&>", "|&"}
_MARKER = re.compile(r"^<!-- plan-build:dispatch (?P<id>[A-Za-z0-9._:-]+) (?P<edge>begin|end) -->")
_OUTCOME = re.compile(r"^Outcome: (?P<outcome>[A-Za-z][A-Za-z ]*?)\s*(?:[·(].*)?$")


def section_lines(section: Section, lines: list[md.Line]) -> Iterator[md.Line]:
    return (ln for ln in lines if section.body_start <= ln.start < section.end)


def scope_entries(
    section: Section, lines: list[md.Line]
) -> tuple[tuple[str, ...], tuple[int, ...]]:
    patterns: list[str] = []
    where: list[int] = []
    for ln in section_lines(section, lines):
        if ln.fenced:
            if md.FENCE.match(ln.content):
                continue
            candidate = ln.content.strip()
        else:
            m = md.BULLET.match(ln.content)
            if not m:
                continue
            item = m.group("item")
            candidate = md.first_backticks(item) or (item.split()[0] if item.split() else "")
        if candidate and not candidate.startswith("#"):
            patterns.append(candidate)
            where.append(ln.no)
    return tuple(patterns), tuple(where)


def commands(
    task: Task, section: Section, lines: list[md.Line], problems: list[Problem]
) -> Iterator[Command]:
    body = list(section_lines(section, lines))
    fenced = any(ln.fenced for ln in body)
    pending: list[str] = []
    first_line = 0
    for ln in body:
        if fenced:
            if not ln.fenced or md.FENCE.match(ln.content):
                continue
            text = ln.content.strip()
        else:
            m = md.BULLET.match(ln.content)
            code = md.first_backticks(m.group("item")) if m else None
            if code is None:
                continue
            text = code
        if not pending:
            if not text or text.startswith("#"):
                continue
            first_line = ln.no
            if text.startswith("$ "):
                text = text[2:].strip()
        if text.endswith("\\"):
            pending.append(text[:-1].rstrip())
            continue
        pending.append(text)
        joined = " ".join(pending)
        pending = []
        cmd = command(task, joined, first_line, problems)
        if cmd is not None:
            yield cmd
    if pending:
        problems.append(
            Problem(first_line, "verification command ends with a dangling \\", task.id)
        )


def command(task: Task, text: str, line: int, problems: list[Problem]) -> Command | None:
    try:
        argv = shlex.split(text, comments=False, posix=True)
    except ValueError as exc:
        problems.append(
            Problem(line, f"cannot split verification command {text!r}: {exc}", task.id)
        )
        return None
    if not argv:
        return None
    shell = next((t for t in argv if t in SHELL_TOKENS), None)
    if shell is None and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", argv[0]):
        shell = argv[0]
    if shell is None and ("$(" in text or re.search(r"(?<!\\)`", text)):
        shell = "$(...)"
    if shell is not None:
        problems.append(
            Problem(
                line,
                f"verification command {text!r} uses shell syntax ({shell}); commands run "
                "without a shell: split it into separate lines, use `env NAME=value cmd`, or "
                "write `sh -c '...'` explicitly",
                task.id,
            )
        )
        return None
    return Command(tuple(argv), text, line)


def blocks(task: Task, lines: list[md.Line], problems: list[Problem]) -> Iterator[Block]:
    open_: tuple[str, md.Line] | None = None
    outcome: str | None = None
    for ln in lines:
        if not (task.start <= ln.start < task.end) or ln.fenced:
            continue
        m = _MARKER.match(ln.content)
        if m is None:
            o = _OUTCOME.match(ln.content) if open_ else None
            if o:
                outcome = o.group("outcome")
            continue
        if m.group("edge") == "begin":
            if open_:
                problems.append(
                    Problem(open_[1].no, f"evidence block {open_[0]} has no end marker", task.id)
                )
            open_ = (m.group("id"), ln)
            outcome = None
        elif open_ and open_[0] == m.group("id"):
            yield Block(open_[0], open_[1].no, open_[1].start, ln.end, outcome)
            open_ = None
    if open_:
        problems.append(
            Problem(open_[1].no, f"evidence block {open_[0]} has no end marker", task.id)
        )
