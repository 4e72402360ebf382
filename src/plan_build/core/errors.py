"""The one error type whose text is the user's message, and the exit codes it maps to."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Exit codes are part of the public interface (docs/USER_MANUAL.md#exit-codes)."""

    OK = 0
    INTERNAL = 1
    USAGE = 2
    PREFLIGHT = 3
    APPROVAL = 4
    IDENTITY_CREATED = 5
    BLOCKED = 6
    INTERRUPTED = 130


class PlanBuildError(Exception):
    """A failure the user can act on: what is wrong, how to fix it, and the exit code.

    `str()` is the whole message as the user sees it (without the `plan-build:` prefix).
    """

    def __init__(self, what: str, fix: str | None = None, *, code: ExitCode) -> None:
        super().__init__(what)
        self.what = what
        self.fix = fix
        self.code = code

    def __str__(self) -> str:
        if self.fix:
            return f"{self.what}\n  fix: {self.fix}"
        return self.what


def usage(what: str, fix: str | None = None) -> PlanBuildError:
    return PlanBuildError(what, fix, code=ExitCode.USAGE)
