"""TASKS.md: the architect's task plan, read and updated without disturbing anything else.

The format (docs/dispatch.md has a full example):

    ## TASK-001: Title                     a task: an ATX heading whose text starts with its id
    Status: Pending                        field lines before the first sub-heading
    Dependencies: none                     (bullets and **bold** keys are fine too)
    ### Objective                          sections: sub-headings with known names
    ### Scope                              one path or glob per bullet
    ### Verification                       commands in a fenced block, one per line (no shell)
    ...

plan-build owns exactly two things in this file: the value of a task's `Status:` line and
the evidence blocks it writes between `<!-- plan-build:dispatch ID begin/end -->` markers.
Every other byte (prose, other sections, unknown fields, line endings, a missing final
newline) is left exactly as it was: edits are splices into the original text, never a
re-serialisation.

Reading and splicing live here (a splice re-parses to find its offsets); the model is in
`taskmodel`, the section bodies (scope, commands, evidence blocks) in `tasksections`, the rules
a plan must satisfy in `tasklint`, the line scanning in `markdown`.
"""

from __future__ import annotations

import re
from pathlib import Path

from plan_build.dispatch import markdown as md
from plan_build.dispatch import tasklint
from plan_build.dispatch import tasksections as sections
from plan_build.dispatch.taskmodel import (
    COMPLETE,
    FILENAME,
    SECTIONS,
    STATUSES,
    TASK_ID,
    Problem,
    Section,
    Task,
    TaskFile,
    TaskFileError,
)

# the model too, so that callers import `taskfile` alone
__all__ = ["COMPLETE", "FILENAME", "STATUSES", "TASK_ID", "Problem", "Task", "TaskFile"]
__all__ += ["TaskFileError", "parse", "read", "with_block", "with_status"]

_SECTION_KEY = {name: key for key, names in SECTIONS.items() for name in names}

FIELD_KEYS = {
    "status": "status",
    "state": "status",
    "dependencies": "dependencies",
    "depends on": "dependencies",
    "depends": "dependencies",
    "deps": "dependencies",
}
NONE_WORDS = {"", "none", "-", "—", "–", "n/a", "na", "nothing", "no"}
_TASK_HEADING = re.compile(r"^\[?(TASK-\d+)\]?(?=$|[\s:.\-–—)])[\s:.\-–—)]*(.*)$")
_LOOSE_TASK = re.compile(r"^\[?task[\s_-]*\d+", re.IGNORECASE)
_FIELD = re.compile(
    r"^[ \t]{0,3}(?:[-*+][ \t]+)?(?:\*\*|__)?(?P<key>[A-Za-z][A-Za-z ]{0,30}?)"
    r"(?:(?:\*\*|__)[ \t]*:|[ \t]*:(?:\*\*|__)?)[ \t]*(?P<value>.*?)[ \t]*$"
)


# ----------------------------------------------------------------------------- reading


def read(path: Path) -> TaskFile:
    """Parse TASKS.md; a missing or unreadable file is a usage error that says what to do."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError as exc:
        raise TaskFileError(
            f"{path} does not exist",
            "write the task plan first (architect mode, phase 3), then run plan-build tasks",
        ) from exc
    except OSError as exc:
        raise TaskFileError(f"cannot read {path}: {exc.strerror}", "check its permissions") from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise TaskFileError(
            f"{path}:{line}: not UTF-8 text",
            "re-save TASKS.md as UTF-8",
        ) from exc
    return parse(text, path)


def _canonical_status(value: str) -> str | None:
    v = re.sub(r"[\s_-]+", " ", md.decorations(value)).strip().lower()
    return next((s for s in STATUSES if s.lower() == v), None)


def parse(text: str, path: Path = Path(FILENAME)) -> TaskFile:
    lines = md.lines(text)
    crlf = text.count("\r\n")
    newline = "\r\n" if crlf and crlf * 2 >= text.count("\n") else "\n"
    problems: list[Problem] = []
    headings: list[tuple[md.Line, int, str]] = []
    for ln in lines:
        if ln.fenced:
            continue
        m = md.HEADING.match(ln.content)
        if m:
            headings.append((ln, len(m.group(1)), (m.group(2) or "").strip()))

    tasks: list[Task] = []
    for i, (ln, level, title) in enumerate(headings):
        m = _TASK_HEADING.match(title)
        if not m:
            if _LOOSE_TASK.match(title):
                problems.append(
                    Problem(
                        ln.no,
                        f"heading {title!r} looks like a task but has no id of the form TASK-001",
                    )
                )
            continue
        task_id, rest = m.group(1), m.group(2).strip()
        if not TASK_ID.match(task_id):
            problems.append(
                Problem(ln.no, f"task id {task_id} needs at least three digits (TASK-001)", task_id)
            )
            continue
        end, stop = len(text), len(headings)
        for j in range(i + 1, len(headings)):
            if headings[j][1] <= level:
                end, stop = headings[j][0].start, j
                break
        last_line = headings[stop][0].no - 1 if stop < len(headings) else len(lines)
        tasks.append(
            Task(
                id=task_id,
                title=md.decorations(rest),
                line=ln.no,
                level=level,
                start=ln.start,
                end=end,
            )
        )
        # only the task's own lines and headings: parsing stays linear in the file's size
        _fill(tasks[-1], text, lines[ln.no - 1 : last_line], headings[i + 1 : stop], problems)

    tf = TaskFile(path=path, text=text, tasks=tasks, problems=problems, newline=newline)
    tasklint.lint(tf)
    tf.problems.sort(key=lambda p: (p.line, p.level != "error"))
    return tf


def _fill(
    task: Task,
    text: str,
    lines: list[md.Line],
    headings: list[tuple[md.Line, int, str]],
    problems: list[Problem],
) -> None:
    inner = [(ln, lvl, t) for ln, lvl, t in headings if task.start < ln.start < task.end]
    # a line can start at the same offset as the task only for the task heading itself
    field_level = min((lvl for _, lvl, _ in inner), default=None)
    task.field_level = field_level
    bounds = [
        (ln, lvl, t) for ln, lvl, t in inner if field_level is not None and lvl <= field_level
    ]
    preamble_end = bounds[0][0].start if bounds else task.end
    for j, (ln, lvl, title) in enumerate(bounds):
        end = bounds[j + 1][0].start if j + 1 < len(bounds) else task.end
        key = _SECTION_KEY.get(re.sub(r"\s+", " ", md.decorations(title).rstrip(":")).lower())
        section = Section(key, title, lvl, ln.no, ln.start, ln.end, end)
        if key is None:
            continue
        if key in task.sections:
            problems.append(
                Problem(
                    ln.no,
                    f'"{title}" section given twice (first at line {task.sections[key].line})',
                    task.id,
                )
            )
            continue
        task.sections[key] = section
        task.bodies[key] = text[section.body_start : section.end]

    _fields(task, lines, preamble_end, problems)
    if "scope" in task.sections:
        task.scope, task.scope_lines = sections.scope_entries(task.sections["scope"], lines)
    if "verification" in task.sections:
        verification = task.sections["verification"]
        task.commands = tuple(sections.commands(task, verification, lines, problems))
    task.blocks = tuple(sections.blocks(task, lines, problems))


def _fields(task: Task, lines: list[md.Line], preamble_end: int, problems: list[Problem]) -> None:
    """Status and Dependencies lines between the task heading and its first section."""
    seen: dict[str, int] = {}
    for ln in lines:
        m = _FIELD.match(ln.content) if task.start < ln.start < preamble_end else None
        key = FIELD_KEYS.get(re.sub(r"\s+", " ", m.group("key")).strip().lower()) if m else None
        if m is None or key is None or ln.fenced:
            continue
        if key in seen:
            problems.append(
                Problem(ln.no, f"{key.capitalize()} given twice (also line {seen[key]})", task.id)
            )
            continue
        seen[key] = ln.no
        value = m.group("value")
        if key == "status":
            task.status_raw = value
            task.status = _canonical_status(value)
            task.status_span = (ln.start + m.start("value"), ln.start + m.end("value"))
            task.status_line = ln.no
            continue
        task.dependencies_line = ln.no
        task.dependencies = tuple(dict.fromkeys(re.findall(r"TASK-\d+", value)))
        if not task.dependencies and md.decorations(value).lower() not in NONE_WORDS:
            problems.append(
                Problem(
                    ln.no,
                    f"Dependencies {value!r} names no task ids (write TASK-001, TASK-002 or none)",
                    task.id,
                )
            )


# ----------------------------------------------------------------------------- writing


def _task_or_error(tf: TaskFile, task_id: str) -> Task:
    task = tf.get(task_id)
    if task is None:
        raise TaskFileError(f"{task_id} is no longer in {tf.path}", "restore the task and rerun")
    return task


def with_status(text: str, task_id: str, status: str) -> str:
    """`text` with the task's Status value replaced (or a Status line added under the heading)."""
    if status not in STATUSES:
        raise ValueError(status)
    tf = parse(text)
    task = _task_or_error(tf, task_id)
    if task.status_span:
        a, b = task.status_span
        return text[:a] + status + text[b:]
    heading_end = next(ln.end for ln in md.lines(text) if ln.start == task.start)
    line = f"Status: {status}{tf.newline}"
    if heading_end == len(text) and not text.endswith(("\n", "\r")):
        line = tf.newline + line
    return text[:heading_end] + line + text[heading_end:]


def with_block(text: str, task_id: str, block_id: str, block: str) -> str:
    """`text` with the evidence block `block_id` of a task replaced or added.

    `block` is the block's inner Markdown ("\\n" line endings); markers are added here and the
    file's own line ending is used. A new block goes at the end of the Evidence section (a
    section is added when the task has none); an existing block is replaced in place.
    """
    tf = parse(text)
    task = _task_or_error(tf, task_id)
    nl = tf.newline
    inner = block if block.endswith("\n") else block + "\n"
    rendered = (
        f"<!-- plan-build:dispatch {block_id} begin -->\n{inner}"
        f"<!-- plan-build:dispatch {block_id} end -->\n"
    ).replace("\n", nl)
    existing = next((b for b in task.blocks if b.id == block_id), None)
    if existing is not None:
        tail = text[existing.start : existing.end]
        if not tail.endswith(("\n", "\r")):
            rendered = rendered[: -len(nl)]
        return text[: existing.start] + rendered + text[existing.end :]
    section = task.sections.get("evidence")
    if section is None:
        level = task.field_level or task.level + 1
        pos = md.content_end(text, task.start, task.end)
        prefix = "" if pos == 0 or text[:pos].endswith(("\n", "\r")) else nl
        addition = f"{prefix}{nl}{'#' * level} Evidence{nl}{nl}{rendered}"
        if pos < len(text) and not text[pos:].startswith(("\n", "\r")):
            addition += nl
        return text[:pos] + addition + text[pos:]
    pos = max(md.content_end(text, section.body_start, section.end), section.body_start)
    prefix = "" if text[:pos].endswith(("\n", "\r")) else nl
    addition = f"{prefix}{nl}{rendered}"
    return text[:pos] + addition + text[pos:]


def with_own_lines(saved: str, now: str, task_id: str, block_id: str) -> str:
    """`saved` with the task's Status value and its evidence block `block_id` taken from `now`:
    what TASKS.md would hold now if only plan-build had written to it since `saved`."""
    now_task = parse(now).get(task_id)
    old_task = parse(saved).get(task_id)
    if now_task is None or old_task is None:
        return saved
    out = saved
    new_block = next((b for b in now_task.blocks if b.id == block_id), None)
    old_block = next((b for b in old_task.blocks if b.id == block_id), None)
    if new_block is not None and old_block is not None:
        out = out[: old_block.start] + now[new_block.start : new_block.end] + out[old_block.end :]
    old_task = parse(out).get(task_id)
    if now_task.status_span and old_task is not None and old_task.status_span:
        (a, b), (x, y) = old_task.status_span, now_task.status_span
        out = out[:a] + now[x:y] + out[b:]
    return out
