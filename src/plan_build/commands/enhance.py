"""`plan-build enhance`: the request on stdin, Auggie's enhanced version approved on a terminal,
the approved text on stdout."""

from __future__ import annotations

from typing import Any

from plan_build.cli.strict import command


@command
def enhance(c: Any) -> None:
    """Rewrite a request with Auggie; print the approved text (request on stdin, end with EOF)."""
    from plan_build.core.context import Session
    from plan_build.startup.enhance import standalone

    standalone(Session.from_process())


TASKS = [enhance]
