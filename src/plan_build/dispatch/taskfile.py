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
"""

from __future__ import annotations

import hashlib
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from plan_build.dispatch import scope as scopes
from plan_build.errors import ExitCode, PlanBuildError

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
SHELL_TOKENS = {"|", "||", "&&", ";", "&", ">", ">>", "<", "<<", "2>", "2>&1", "&>", "|&"}

_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_TASK_HEADING = re.compile(r"^\[?(TASK-\d+)\]?(?=$|[\s:.\-–—)])[\s:.\-–—)]*(.*)$")
_LOOSE_TASK = re.compile(r"^\[?task[\s_-]*\d+", re.IGNORECASE)
_FIELD = re.compile(
    r"^[ \t]{0,3}(?:[-*+][ \t]+)?(?:\*\*|__)?(?P<key>[A-Za-z][A-Za-z ]{0,30}?)"
    r"(?:(?:\*\*|__)[ \t]*:|[ \t]*:(?:\*\*|__)?)[ \t]*(?P<value>.*?)[ \t]*$"
)
_BULLET = re.compile(r"^[ \t]*(?:[-*+]|\d+[.)])[ \t]+(?P<item>.*?)[ \t]*$")
_BACKTICKS = re.compile(r"(`+)(.+?)\1")
_MARKER = re.compile(r"^<!-- plan-build:dispatch (?P<id>[A-Za-z0-9._:-]+) (?P<edge>begin|end) -->")
_OUTCOME = re.compile(r"^Outcome: (?P<outcome>[A-Za-z][A-Za-z ]*?)\s*(?:[·(].*)?$")


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
        return _unwrap_fence(self.body("prompt"))

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


@dataclass(frozen=True)
class _Line:
    no: int  # 1-based
    start: int  # offset of the first character (after a BOM on line 1)
    end: int  # offset after the line ending
    content: str  # without the line ending
    fenced: bool  # inside (or the delimiter of) a fenced code block


def _lines(text: str) -> list[_Line]:
    out: list[_Line] = []
    pos = 0
    fence: tuple[str, int] | None = None
    for no, raw in enumerate(text.splitlines(keepends=True), start=1):
        start = pos
        pos += len(raw)
        content = raw.rstrip("\r\n")
        if no == 1 and content.startswith("\ufeff"):
            content = content[1:]
            start += 1
        m = _FENCE.match(content)
        fenced = fence is not None
        if fence is None and m:
            fence = (m.group(1)[0], len(m.group(1)))
            fenced = True
        elif (
            fence is not None
            and m
            and m.group(1)[0] == fence[0]
            and len(m.group(1)) >= fence[1]
            and not m.group(2).strip()
        ):
            fence = None
        out.append(_Line(no, start, pos, content, fenced))
    return out


def _decorations(value: str) -> str:
    v = value.strip()
    for mark in ("**", "__", "`", "*", "_"):
        if len(v) > 2 * len(mark) - 1 and v.startswith(mark) and v.endswith(mark):
            v = v[len(mark) : -len(mark)].strip()
    return v


def _canonical_status(value: str) -> str | None:
    v = re.sub(r"[\s_-]+", " ", _decorations(value)).strip().lower()
    return next((s for s in STATUSES if s.lower() == v), None)


def parse(text: str, path: Path = Path(FILENAME)) -> TaskFile:
    lines = _lines(text)
    crlf = text.count("\r\n")
    newline = "\r\n" if crlf and crlf * 2 >= text.count("\n") else "\n"
    problems: list[Problem] = []
    headings: list[tuple[_Line, int, str]] = []
    for ln in lines:
        if ln.fenced:
            continue
        m = _HEADING.match(ln.content)
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
                title=_decorations(rest),
                line=ln.no,
                level=level,
                start=ln.start,
                end=end,
            )
        )
        # only the task's own lines and headings: parsing stays linear in the file's size
        _fill(tasks[-1], text, lines[ln.no - 1 : last_line], headings[i + 1 : stop], problems)

    tf = TaskFile(path=path, text=text, tasks=tasks, problems=problems, newline=newline)
    _lint(tf, lines)
    tf.problems.sort(key=lambda p: (p.line, p.level != "error"))
    return tf


def _fill(
    task: Task,
    text: str,
    lines: list[_Line],
    headings: list[tuple[_Line, int, str]],
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
        key = _SECTION_KEY.get(re.sub(r"\s+", " ", _decorations(title).rstrip(":")).lower())
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
        task.scope, task.scope_lines = _scope_entries(task.sections["scope"], lines)
    if "verification" in task.sections:
        task.commands = tuple(_commands(task, task.sections["verification"], lines, problems))
    task.blocks = tuple(_blocks(task, text, lines, problems))


def _fields(task: Task, lines: list[_Line], preamble_end: int, problems: list[Problem]) -> None:
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
        if not task.dependencies and _decorations(value).lower() not in NONE_WORDS:
            problems.append(
                Problem(
                    ln.no,
                    f"Dependencies {value!r} names no task ids (write TASK-001, TASK-002 or none)",
                    task.id,
                )
            )


def _section_lines(section: Section, lines: list[_Line]) -> Iterator[_Line]:
    return (ln for ln in lines if section.body_start <= ln.start < section.end)


def _first_backticks(item: str) -> str | None:
    m = _BACKTICKS.search(item)
    return m.group(2).strip() if m else None


def _scope_entries(section: Section, lines: list[_Line]) -> tuple[tuple[str, ...], tuple[int, ...]]:
    patterns: list[str] = []
    where: list[int] = []
    for ln in _section_lines(section, lines):
        if ln.fenced:
            if _FENCE.match(ln.content):
                continue
            candidate = ln.content.strip()
        else:
            m = _BULLET.match(ln.content)
            if not m:
                continue
            item = m.group("item")
            candidate = _first_backticks(item) or (item.split()[0] if item.split() else "")
        if candidate and not candidate.startswith("#"):
            patterns.append(candidate)
            where.append(ln.no)
    return tuple(patterns), tuple(where)


def _commands(
    task: Task, section: Section, lines: list[_Line], problems: list[Problem]
) -> Iterator[Command]:
    body = list(_section_lines(section, lines))
    fenced = any(ln.fenced for ln in body)
    pending: list[str] = []
    first_line = 0
    for ln in body:
        if fenced:
            if not ln.fenced or _FENCE.match(ln.content):
                continue
            text = ln.content.strip()
        else:
            m = _BULLET.match(ln.content)
            code = _first_backticks(m.group("item")) if m else None
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
        cmd = _command(task, joined, first_line, problems)
        if cmd is not None:
            yield cmd
    if pending:
        problems.append(
            Problem(first_line, "verification command ends with a dangling \\", task.id)
        )


def _command(task: Task, text: str, line: int, problems: list[Problem]) -> Command | None:
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


def _blocks(task: Task, text: str, lines: list[_Line], problems: list[Problem]) -> Iterator[Block]:
    open_: tuple[str, _Line] | None = None
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


def _unwrap_fence(body: str) -> str:
    stripped = body.strip("\r\n")
    lines = stripped.splitlines()
    if len(lines) >= 2:
        m = _FENCE.match(lines[0])
        last = lines[-1].strip()
        if m and last and set(last) == {m.group(1)[0]} and len(last) >= len(m.group(1)):
            inner = "\n".join(lines[1:-1])
            if not _FENCE.match(inner.splitlines()[0] if inner else ""):
                return inner + "\n"
    return body.strip("\r\n") + "\n" if body.strip() else ""


# ----------------------------------------------------------------------------- lint


def _lint(tf: TaskFile, lines: list[_Line]) -> None:
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
                    f"more than one task is In Progress ({ids}); only one may be",
                    t.id,
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
    heading_end = next(ln.end for ln in _lines(text) if ln.start == task.start)
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
        pos = _content_end(text, task.start, task.end)
        prefix = "" if pos == 0 or text[:pos].endswith(("\n", "\r")) else nl
        addition = f"{prefix}{nl}{'#' * level} Evidence{nl}{nl}{rendered}"
        if pos < len(text) and not text[pos:].startswith(("\n", "\r")):
            addition += nl
        return text[:pos] + addition + text[pos:]
    pos = max(_content_end(text, section.body_start, section.end), section.body_start)
    prefix = "" if text[:pos].endswith(("\n", "\r")) else nl
    addition = f"{prefix}{nl}{rendered}"
    return text[:pos] + addition + text[pos:]


def _content_end(text: str, start: int, end: int) -> int:
    """The offset just after the last non-blank line in text[start:end] (after its newline)."""
    chunk = text[start:end]
    stripped = chunk.rstrip(" \t\r\n")
    if not stripped:
        return start
    pos = start + len(stripped)
    nl_at = text.find("\n", pos)
    return end if nl_at == -1 or nl_at >= end else nl_at + 1
