"""Invoke plumbing that makes the command line strict.

Invoke silently accepts a repeated flag and reports parse errors with exit 1; plan-build
refuses repeated flags and reports every command-line mistake as a usage error (exit 2).
Tasks are declared with `@command`, which is `invoke.task` with these rules built in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, overload

from invoke.exceptions import ParseError
from invoke.parser.argument import Argument
from invoke.tasks import Task, task

F = TypeVar("F", bound=Callable[..., Any])


class StrictArgument(Argument):
    """An argument that may be given at most once."""

    def set_value(self, value: Any, cast: bool = True) -> None:
        if self.raw_value is not None and not self.kind is list:  # noqa: E714
            flag = "--" + self.name.replace("_", "-") if self.name else "option"
            raise ParseError(f"{flag} was given more than once")
        try:
            super().set_value(value, cast=cast)
        except ValueError:  # int("many"): invoke would let it escape as an internal error
            from plan_build import errors

            flag = "--" + self.name.replace("_", "-") if self.name else "option"
            if self.kind is not int:
                raise errors.usage(
                    f"{flag} cannot take {value!r}", f"see {flag} in --help"
                ) from None
            example = self.default if isinstance(self.default, int) else 1
            raise errors.usage(
                f"{flag} must be a whole number (got {value!r})",
                f"give a number, e.g. {flag} {example}",
            ) from None


class StrictTask(Task[Any]):
    def get_arguments(self, ignore_unknown_help: bool | None = None) -> list[Argument]:
        args = super().get_arguments(ignore_unknown_help=ignore_unknown_help)
        for arg in args:
            arg.__class__ = StrictArgument
        return args


@overload
def command(func: Callable[..., Any], /) -> StrictTask: ...


@overload
def command(**kwargs: Any) -> Callable[[Callable[..., Any]], StrictTask]: ...


def command(*args: Any, **kwargs: Any) -> Any:
    """`@invoke.task` with strict flags and no automatic short flags."""
    kwargs.setdefault("klass", StrictTask)
    kwargs.setdefault("auto_shortflags", False)
    return task(*args, **kwargs)
