"""Invoke plumbing that makes the command line strict.

Invoke silently accepts a repeated flag, takes a flag-looking word (`--help`, `--json-x`) as
the value of a missing positional argument, and reports parse errors with exit 1; plan-build
refuses all of these and reports every command-line mistake as a usage error (exit 2).
Tasks are declared with `@command`, which is `invoke.task` with these rules built in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, overload

from invoke.exceptions import ParseError
from invoke.parser.argument import Argument
from invoke.parser.parser import Parser, ParseResult
from invoke.tasks import Task, task

F = TypeVar("F", bound=Callable[..., Any])
HELP_FLAGS = ("-h", "--help")


def metavar(name: str | None) -> str:
    """`TASK-ID` for the positional argument `task_id`."""
    return (name or "value").upper().replace("_", "-")


class FlagForArgument(ParseError):
    """A flag-looking word where a command expects a positional argument (`dispatch --help`,
    `dispatch --json-x`): help or an unknown option, never the argument's value."""

    def __init__(self, token: str, argument: str) -> None:
        super().__init__(f"unknown option {token}")
        self.token = token
        self.argument = argument
        self.command: str | None = None


class StrictArgument(Argument):
    """An argument that may be given at most once; a positional one never takes a flag."""

    def set_value(self, value: Any, cast: bool = True) -> None:
        if self.positional and isinstance(value, str) and value.startswith("-") and value != "-":
            raise FlagForArgument(value, metavar(self.name))
        if self.raw_value is not None and not self.kind is list:  # noqa: E714
            flag = "--" + self.name.replace("_", "-") if self.name else "option"
            raise ParseError(f"{flag} was given more than once")
        try:
            super().set_value(value, cast=cast)
        except ValueError:  # int("many"): invoke would let it escape as an internal error
            from plan_build.core import errors

            flag = "--" + self.name.replace("_", "-") if self.name else "option"
            if self.kind is not int:
                raise errors.usage(
                    f"{flag} cannot take {value!r}", f"see {flag} in --help"
                ) from None
            # a default that means "not given" (0, -1) is no example of a value to give
            example = self.default if isinstance(self.default, int) and self.default > 0 else 1
            raise errors.usage(
                f"{flag} must be a whole number (got {value!r})",
                f"give a number, e.g. {flag} {example}",
            ) from None


class StrictTask(Task[Any]):
    def get_arguments(self, ignore_unknown_help: bool | None = None) -> list[Argument]:
        # invoke hands each help text out once (it pops them); keep them for the next parser
        # (completion builds a second one, and tests run many programs in one process)
        kept = dict(self.help)
        try:
            args = super().get_arguments(ignore_unknown_help=ignore_unknown_help)
        finally:
            self.help = kept
        for arg in args:
            arg.__class__ = StrictArgument
        return args


# A command whose positional argument a flag makes unnecessary (invoke has no optional
# positionals): `dispatch --wave` runs every ready task, so it names none (and `--jobs`, which
# belongs to a wave, is told so by the command rather than asked for a task id). The parser then
# gets NO_VALUE in that place, which the task reads as "not given".
OPTIONAL_POSITIONAL = {"dispatch": (("--wave", "--jobs"), ("--jobs",))}
NO_VALUE = "\0none"


def optional_positionals(argv: list[str]) -> list[str]:
    """`argv` with NO_VALUE where a command's positional may be left out and is."""
    out = list(argv)
    for name, (flags, valued) in OPTIONAL_POSITIONAL.items():
        if name not in out:
            continue
        at = out.index(name)
        rest = out[at + 1 :]
        if not any(w == f or w.startswith(f + "=") for w in rest for f in flags):
            continue
        words = [
            w
            for i, w in enumerate(rest)
            if not w.startswith("-") and not (i and rest[i - 1] in valued)
        ]
        if not words:
            out.insert(at + 1, NO_VALUE)
    return out


# A command that takes any number of words (`restore [CHECKPOINT] [PATH…]`; invoke has no
# variadic positionals): each word after the command becomes a value of this repeatable flag.
VARIADIC = {"restore": "--word"}


def variadic_positionals(argv: list[str]) -> list[str]:
    """`argv` with each plain word after a VARIADIC command given as its flag's value."""
    for name, flag in VARIADIC.items():
        if name not in argv:
            continue
        at = argv.index(name)
        rest: list[str] = []
        for word in argv[at + 1 :]:
            rest += [word] if word.startswith("-") else [flag, word]
        return [*argv[: at + 1], *rest]
    return argv


class StrictParser(Parser):
    """Names the command a flag-looking positional belongs to (for its help or for completion
    of its flags)."""

    def parse_argv(self, argv: list[str]) -> ParseResult:
        try:
            return super().parse_argv(variadic_positionals(optional_positionals(argv)))
        except FlagForArgument as exc:
            exc.command = next((t for t in argv if t in self.contexts), None)
            if exc.command is not None:
                exc.context = self.contexts[exc.command]
            raise


@overload
def command(func: Callable[..., Any], /) -> StrictTask: ...


@overload
def command(**kwargs: Any) -> Callable[[Callable[..., Any]], StrictTask]: ...


def command(*args: Any, **kwargs: Any) -> Any:
    """`@invoke.task` with strict flags and no automatic short flags."""
    kwargs.setdefault("klass", StrictTask)
    kwargs.setdefault("auto_shortflags", False)
    return task(*args, **kwargs)
