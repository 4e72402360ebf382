"""What `plan-build`, `plan-build --help`, `--list` and `<command> --help` print.

Derived from the registered tasks, so a new command shows up in `--list` and in its own help
by itself; the no-argument overview also needs one line in `OVERVIEW` (its group and summary).
Fixed at 80 columns so the text is the same on every terminal (and in the golden files).
Loaded only when help is printed: startup stays light.
"""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Iterable, Iterator, Sequence

from invoke.collection import Collection
from invoke.parser.argument import Argument
from invoke.parser.context import to_flag
from invoke.tasks import Task
from invoke.util import helpline

from plan_build.cli.strict import metavar

WIDTH = 80


def manual() -> str:
    """Where this copy's manual is: shipped in the wheel (`_data/USER_MANUAL.md`) or in the
    checkout's docs/; the source's address only when neither is on this machine."""
    from plan_build.core.resources import CHECKOUT_ROOT, PACKAGE_DIR

    for path in (
        PACKAGE_DIR / "_data" / "USER_MANUAL.md",
        CHECKOUT_ROOT / "docs" / "USER_MANUAL.md",
    ):
        if path.is_file():
            return str(path)
    return "docs/USER_MANUAL.md in the plan-build source"


# The everyday commands by what the user is doing. A command appears once it is registered.
OVERVIEW: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    (
        "start a session",
        (
            ("plan", "standard workflow: your request, then Claude Code"),
            ("architect", "Claude writes the documents, Codex the code"),
        ),
    ),
    (
        "during a session",
        (
            ("review", "the next review of the plan or of the change"),
            ("status", "where the session stands and what commit still lacks"),
            ("report", "the whole session as one page (HTML) or Markdown"),
            ("checkpoints", "the work tree as recorded before each agent write"),
            ("restore", "bring files and index back from a checkpoint"),
        ),
    ),
    (
        "finish",
        (
            ("verify", "check the change: project checks, secrets, links"),
            ("commit", "commit exactly that change after approval; no push"),
        ),
    ),
    (
        "architect",
        (
            ("tasks", "list and lint TASKS.md"),
            ("dispatch", "run one approved task through Codex, verified"),
        ),
    ),
    (
        "releases",
        (
            ("release", "the active release and the one this run uses"),
            ("release.activate", "validate a bundle and switch to it"),
        ),
    ),
    (
        "setup and diagnosis",
        (
            ("setup", "fix every failing readiness check, with your consent"),
            ("preflight", "the readiness report alone"),
            ("identity", "show or create the repository's memory identity"),
            ("env", "the effective configuration, only checked facts"),
        ),
    ),
)

# Value names for options whose own name says little about what to type.
METAVARS = {
    "set": "ID",
    "to": "ID",
    "id": "ID",
    "workflow": "ID",
    "keep": "N",
    "bin_dir": "DIR",
    "checkout": "DIR",
    "out": "DIR",
    "plan": "FILE",
    "focus": "TEXT",
    "message": "TEXT",
    "sha256": "DIGEST",
}


def commands(coll: Collection, prefix: str = "") -> Iterator[tuple[str, Task]]:  # type: ignore[type-arg]
    """Every command once, by the name to type: a collection's default task by the
    collection's name (`review`, `release`), not also as `review.review`."""
    if prefix and coll.default:
        yield prefix.rstrip("."), coll.tasks[coll.default]
    for name in sorted(coll.tasks):
        if not (prefix and name == coll.default):
            yield prefix + name, coll.tasks[name]
    for name in sorted(coll.collections):
        yield from commands(coll.collections[name], f"{prefix}{name}.")


def with_arguments(name: str, task: Task) -> str:  # type: ignore[type-arg]
    return " ".join([name, *(metavar(p) for p in task.positional)])


def columns(rows: Sequence[tuple[str, str]], indent: str = "  ") -> list[str]:
    """`  name   description`, the description wrapped under itself."""
    if not rows:
        return []
    width = max(len(name) for name, _ in rows)
    if width > 24:  # a long name keeps its own line rather than pushing every description
        width = max((len(n) for n, _ in rows if len(n) <= 24), default=24)
    lines = []
    for name, text in rows:
        hang = indent + " " * (width + 3)
        body = textwrap.wrap(text, WIDTH - len(hang)) or [""]
        if len(name) > width:
            lines.append(indent + name)
            lines.extend(hang + chunk for chunk in body)
            continue
        lines.append((indent + name.ljust(width + 3) + body[0]).rstrip())
        lines.extend(hang + chunk for chunk in body[1:])
    return lines


def overview(coll: Collection, binary: str) -> str:
    """`plan-build` alone: the everyday commands grouped, one line each, and where to look."""
    known = dict(commands(coll))
    out = [
        "plan-build: one multi-agent coding session in a git repository, with Claude Code",
        "leading, Codex implementing and reviewing, CodeRabbit reviewing and AgentMemory",
        "carrying memory between sessions.",
        "",
        f"usage: {binary} <command> [--options]",
    ]
    rows: list[tuple[str, str]] = []
    groups: list[tuple[str, list[tuple[str, str]]]] = []
    for title, entries in OVERVIEW:
        present = [(with_arguments(n, known[n]), text) for n, text in entries if n in known]
        if present:
            groups.append((title, present))
            rows.extend(present)
    width = max(len(n) for n, _ in rows)
    for title, present in groups:
        out += ["", title]
        out += [f"  {n.ljust(width)}   {text}" for n, text in present]
    out += [
        "",
        f"every command: {binary} --list · one command: {binary} <command> --help",
        f"manual: {manual()}",
    ]
    return "\n".join(out) + "\n"


def command_list(coll: Collection) -> str:
    rows = [(with_arguments(n, t), helpline(t) or "") for n, t in commands(coll)]
    return "\n".join(["commands:", *columns(rows)]) + "\n"


def core_help(coll: Collection, binary: str, options: Sequence[tuple[str, str]]) -> str:
    """`plan-build --help`: usage, the options that exist, every command."""
    out = [
        f"usage: {binary} [-d] <command> [--options] [ARGUMENTS]",
        f"       {binary} -h [COMMAND] | -l | -V | --print-completion-script SHELL",
        "",
        "options:",
        *columns(options),
        "",
        command_list(coll).rstrip("\n"),
        "",
        f"one command's help: {binary} <command> --help",
        f"the everyday commands by what you are doing: {binary} (no arguments)",
        f"manual: {manual()}",
    ]
    return "\n".join(out) + "\n"


def option_rows(
    task: Task,  # type: ignore[type-arg]
    arguments: Iterable[Argument],
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(positional arguments, options) of a task's parser arguments, as (spec, help) rows."""
    positional, options = [], []
    for arg in arguments:
        text, name = arg.help or "", arg.name or ""
        if arg.positional:
            positional.append((metavar(name), text))
        elif arg.kind is bool:
            options.append(
                (to_flag(name) if not arg.default else f"--no-{to_flag(name)[2:]}", text)
            )
        else:
            value = METAVARS.get(name) or ("N" if arg.kind is int else metavar(name))
            options.append((f"{to_flag(name)} {value}", text))
    order = {p: i for i, p in enumerate(metavar(p) for p in task.positional)}
    positional.sort(key=lambda row: order.get(row[0], 0))
    return positional, sorted(options)


def command_help(
    binary: str,
    name: str,
    task: Task,  # type: ignore[type-arg]
    arguments: Iterable[Argument],
) -> str:
    """`plan-build <command> --help` (the arguments come from the parser: invoke hands each
    option's help text out only once)."""
    positional, options = option_rows(task, arguments)
    usage = " ".join(
        [f"usage: {binary} {name}", *(["[--options]"] if options else [])]
        + [spec for spec, _ in positional]
    )
    out = [usage, ""]
    doc = inspect.getdoc(task.body) or "(no description)"
    paragraphs = [" ".join(p.split()) for p in doc.split("\n\n")]
    out += "\n\n".join(textwrap.fill(p, WIDTH) for p in paragraphs).splitlines()
    if positional:
        out += ["", "arguments:", *columns(positional)]
    out += ["", "options:", *columns([*options, ("-h, --help", "show this help")])]
    return "\n".join(out) + "\n"
