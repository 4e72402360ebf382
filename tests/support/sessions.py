"""An in-process Session with scripted answers and captured output."""

from __future__ import annotations

import io
import os
from pathlib import Path

from plan_build.core.context import Session
from plan_build.core.resources import locate
from plan_build.core.ui import Console
from tests.support.interaction import ScriptedInteraction


class TTYText(io.StringIO):
    """A text stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def make_session(
    cwd: Path, *, answers: list[str] | None = None, tty: bool = True, stdin_text: str = ""
) -> tuple[Session, io.StringIO, io.StringIO]:
    err = io.StringIO()
    out: io.StringIO = TTYText() if tty else io.StringIO()
    stdin = TTYText(stdin_text) if tty else io.StringIO(stdin_text)
    env = dict(os.environ)
    session = Session(
        cwd=cwd,
        env=env,
        console=Console(stream=err, fancy=False),
        ui=ScriptedInteraction(list(answers or []), interactive=tty),
        resources=locate(env),
        stdin=stdin,
        stdout=out,
    )
    return session, out, err
