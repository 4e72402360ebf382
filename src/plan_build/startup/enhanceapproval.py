"""The user's side of prompt enhancement: the terminal that asks, the candidate shown in full,
and the approve / edit / original / stop loop. Nothing Auggie wrote is used without it."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from plan_build.core.context import Session
from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.core.interact import Choice, controlling_terminal, isatty
from plan_build.core.ui import Console

Source = Literal["enhanced", "edited", "original"]


@dataclass(frozen=True)
class Enhanced:
    text: str  # the approved text to launch with
    original: str  # the user's request as typed
    source: Source
    keep_original: bool  # the user asked to keep the original in the prompt's context section


@contextlib.contextmanager
def approval_terminal(session: Session) -> Iterator[Session]:
    """`session` with its questions on a terminal.

    Its own interaction when that can ask; otherwise /dev/tty (stdin may be the request's pipe
    and stdout the approved text's). No terminal at all: exit 3 before anything runs.
    """
    if session.ui.interactive:
        yield session
        return
    with controlling_terminal() as tty:
        if tty is None:
            raise PlanBuildError(
                "prompt enhancement needs a terminal to ask for approval, and there is none",
                "run it from an interactive terminal (the request itself may still be piped in)",
                code=ExitCode.PREFLIGHT,
            )
        console = session.console if isatty(session.console.stream) else Console(stream=tty.stderr)
        yield dataclasses.replace(session, ui=tty, console=console)


# --- the approval ----------------------------------------------------------------------------


def stopped(where: str) -> PlanBuildError:
    return PlanBuildError(f"stopped at {where}; nothing was used", None, code=ExitCode.APPROVAL)


def _rule(console: Console) -> str:
    return ("─" if console.fancy else "-") * 60


def show(console: Console, title: str, text: str) -> None:
    console.say("")
    console.say(title)
    console.say(_rule(console))
    console.say(text.rstrip("\n"))
    console.say(_rule(console))


def ask_indexing(session: Session, repo_root: Path) -> bool:
    con = session.console
    con.say(f"Auggie can index {repo_root} before it rewrites your request.")
    con.say("  Indexing sends the repository's files to Augment's service to build a search")
    con.say("  index, so the rewrite can refer to your code. Without it, Auggie sees only your")
    con.say("  request and runs in an empty temporary directory. Either way it runs in ask mode")
    con.say("  and is told to change nothing.")
    return session.ui.confirm("Let Auggie index this repository?", default=False)


def review(
    session: Session,
    payload: str,
    enhanced: str,
    *,
    question: str = "Use this request?",
    ask_keep_original: bool = True,
) -> Enhanced:
    """Show the candidate in full until the user approves it, edits it, takes the original or
    stops. An edit is shown again for approval."""
    con = session.console
    candidate, source = enhanced, "enhanced"
    while True:
        title = "Auggie's enhanced request:" if source == "enhanced" else "Your edited request:"
        show(con, title, candidate)
        answer = session.ui.choose(
            question,
            [
                Choice("a", "approve"),
                Choice("e", "edit"),
                Choice("o", "original"),
                Choice("s", "stop"),
            ],
            default="s",
        )
        if answer == "s":
            raise stopped("the enhanced-request approval")
        if answer == "o":
            return Enhanced(payload, payload, "original", False)
        if answer == "a":
            break
        try:
            edited = session.ui.edit(candidate, suffix=".md")
        except PlanBuildError as exc:
            con.say(f"edit failed: {exc.what}")
            if exc.fix:
                con.say(f"  {con.arrow()} {exc.fix}")
            continue
        if not edited.strip():
            con.say("the edited request is empty; it was not used")
            continue
        if edited != candidate:
            candidate, source = edited, "edited"
    keep = ask_keep_original and session.ui.confirm(
        "Also keep your original wording in the prompt, for context?", default=False
    )
    return Enhanced(candidate, payload, source, keep)  # type: ignore[arg-type]


__all__ = ["Enhanced", "Source", "approval_terminal", "ask_indexing", "review", "show", "stopped"]
