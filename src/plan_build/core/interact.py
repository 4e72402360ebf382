"""The one place plan-build asks the user something.

Every gate names what happens on yes, defaults to the safe answer and accepts the first
letter. Without a terminal nothing is ever approved: the gate stops with exit 4. Inside an
agent session nothing is approved either, terminal or not: `require_person` refuses when the
environment carries Claude Code's or Codex's markers or when any ancestor process is Claude
Code or Codex (an agent can fake a terminal with `script` and unset variables, but it cannot
unset its own ancestry without leaving the tree; docs/verify.md says what remains).
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TextIO

from plan_build.core import interrupts
from plan_build.core.errors import ExitCode, PlanBuildError

# Set by Claude Code and Codex in the commands they run.
# PLAN_BUILD_BROKERED: the session broker's runs, which act for an agent (startup/broker.py)
AGENT_MARKERS = (
    "CLAUDECODE",
    "CODEX_SANDBOX",
    "CODEX_SANDBOX_NETWORK_DISABLED",
    "PLAN_BUILD_BROKERED",
)
# Programs whose descendants are agents, by the names a process goes by (proctree.describe).
AGENT_PROGRAMS = {"claude": "Claude Code", "codex": "Codex"}
OUTSIDE = (
    "in a terminal outside Claude Code or Codex; a `!` line in Claude does not count "
    "(it runs inside Claude, without a terminal)"
)


@dataclass(frozen=True)
class Choice:
    key: str  # one lower-case letter, unique within a question
    label: str  # shown as "[r]etry"-style text: the key must be the label's first letter


class Interaction(Protocol):
    @property
    def interactive(self) -> bool: ...

    def choose(self, question: str, choices: Sequence[Choice], default: str) -> str: ...

    def confirm(self, question: str, *, default: bool = False) -> bool: ...

    def edit(self, text: str, *, suffix: str = ".md") -> str: ...

    def type_words(self, question: str, words: str) -> bool: ...


def no_terminal(question: str) -> PlanBuildError:
    return PlanBuildError(
        f"approval needed but there is no terminal to ask: {question}",
        "run the command again from an interactive terminal",
        code=ExitCode.APPROVAL,
    )


@dataclass(frozen=True)
class Presence:
    """Whether this process runs inside an agent, and what was checked to say so."""

    reason: str | None  # why it is an agent's, or None
    how: str  # what was checked, for approval records


def agent_presence(
    env: Mapping[str, str], *, parents: Callable[[], list[int]] | None = None
) -> Presence:
    """An agent's environment marker, or an ancestor that is Claude Code or Codex (by its
    names, or by a live Claude Code session file for its pid)."""
    marker = next((k for k in AGENT_MARKERS if env.get(k)), None)
    if marker is not None:
        return Presence(f"{marker} is set", "environment")
    from plan_build.core import claudesessions as sessions
    from plan_build.core import proctree

    chain = (parents or proctree.ancestors)()
    directory = sessions.sessions_dir(env)
    for pid in chain:
        found = proctree.describe(pid)
        program = next((AGENT_PROGRAMS[n] for n in found.names if n in AGENT_PROGRAMS), None)
        if program is None and sessions.live_file(directory, pid):
            program = "Claude Code"
        if program is not None:
            name = found.names[0] if found.names else "?"
            return Presence(f"ancestor process {pid} ({name}) is {program}", "process tree")
    how = (
        f"on a terminal; no {'/'.join(AGENT_MARKERS[:2])}* in the environment and no Claude "
        f"Code or Codex among {len(chain)} ancestor processes"
    )
    return Presence(None, how)


def agent_refusal(what: str, command: str, reason: str) -> PlanBuildError:
    """The refusal an agent reads: it cannot approve, so it must ask the user."""
    return PlanBuildError(
        f"{what} needs the user's own approval, and this runs inside an agent session ({reason})",
        f"ask the user to run `{command}` {OUTSIDE}",
        code=ExitCode.APPROVAL,
    )


def require_person(
    env: Mapping[str, str],
    *,
    what: str,
    command: str,
    parents: Callable[[], list[int]] | None = None,
) -> str:
    """Refuse (exit 4) inside an agent session; else say how that was confirmed. Every
    approval gate calls this before it asks."""
    found = agent_presence(env, parents=parents)
    if found.reason is not None:
        raise agent_refusal(what, command, found.reason)
    return found.how


def next_command(env: Mapping[str, str], command: str) -> str:
    """`next: <command>` for a person, `next: ask the user to run <command>` for an agent."""
    if agent_presence(env).reason is not None:
        return f"next: ask the user to run {command} {OUTSIDE}"
    return f"next: {command}"


def render_choices(choices: Sequence[Choice], default: str) -> str:
    """`[r]etry · continue [d]egraded · [s]top (default)`: the key bracketed where a word starts
    with it, else in front."""
    parts = []
    for c in choices:
        m = re.search(rf"\b{re.escape(c.key)}", c.label, flags=re.IGNORECASE)
        if m:
            i = m.start()
            label = f"{c.label[:i]}[{c.label[i]}]{c.label[i + 1 :]}"
        else:
            label = f"[{c.key}] {c.label}"
        parts.append(label + (" (default)" if c.key == default else ""))
    return " · ".join(parts)


def match_choice(answer: str, choices: Sequence[Choice], default: str) -> str | None:
    """The key an answer selects: empty means the default, else first letter or full label."""
    text = answer.strip().lower()
    if not text:
        return default
    for c in choices:
        if text in (c.key, c.label.lower()):
            return c.key
    return None


def _refuse_inside_agent(question: str) -> None:
    """Whatever the caller checked: a question on a terminal is never answered by an agent."""
    found = agent_presence(os.environ)
    if found.reason is not None:
        raise agent_refusal(f"answering {question!r}", "the same plan-build command", found.reason)


@dataclass
class TerminalInteraction:
    """Asks on the terminal: questions on stderr, answers from stdin."""

    stdin: TextIO = field(default_factory=lambda: sys.stdin)
    stderr: TextIO = field(default_factory=lambda: sys.stderr)

    @property
    def interactive(self) -> bool:
        try:
            return self.stdin is not None and self.stdin.isatty() and self.stderr.isatty()
        except (ValueError, AttributeError):
            return False

    def _ask(self, prompt: str) -> str | None:
        self.stderr.write(prompt)
        self.stderr.flush()
        line = self.stdin.readline()
        if not line:  # Ctrl-D: take the safe default
            self.stderr.write("\n")
            return None
        return line

    def choose(self, question: str, choices: Sequence[Choice], default: str) -> str:
        if not self.interactive:
            raise no_terminal(question)
        _refuse_inside_agent(question)
        while True:
            line = self._ask(f"{question} {render_choices(choices, default)} ")
            if line is None:
                return default
            key = match_choice(line, choices, default)
            if key is not None:
                return key
            self.stderr.write(f"  answer with one of: {', '.join(c.key for c in choices)}\n")

    def confirm(self, question: str, *, default: bool = False) -> bool:
        yes, no = Choice("y", "yes"), Choice("n", "no")
        return self.choose(question, [yes, no], "y" if default else "n") == "y"

    def type_words(self, question: str, words: str) -> bool:
        """True only when the person types exactly `words` (a choice a keypress must not
        make: launching without the sandbox); anything else, or Ctrl-D, is no."""
        if not self.interactive:
            raise no_terminal(question)
        _refuse_inside_agent(question)
        line = self._ask(f"{question}: ")
        return line is not None and line.strip() == words

    def edit(self, text: str, *, suffix: str = ".md") -> str:
        if not self.interactive:
            raise no_terminal("edit text")
        _refuse_inside_agent("edit text")
        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
        if not editor:
            raise PlanBuildError(
                "no editor configured",
                "set VISUAL or EDITOR (for example: export EDITOR=nano)",
                code=ExitCode.APPROVAL,
            )
        from plan_build.core import fsutil, proc  # local: only editing needs them

        # the temp name carries its owner, so a killed run's file is swept by the next edit
        fsutil.sweep(Path(tempfile.gettempdir()), "plan-build-edit")
        fd, name = tempfile.mkstemp(prefix=f"plan-build-edit{fsutil.owner_tag()}", suffix=suffix)
        path = Path(name)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            import shlex

            try:
                words = shlex.split(editor)
            except ValueError as exc:
                raise PlanBuildError(
                    f"cannot read the editor command {editor!r}: {exc}",
                    "fix the quoting in VISUAL or EDITOR",
                    code=ExitCode.APPROVAL,
                ) from exc
            code = proc.run_attached([*words, str(path)], terminal=(self.stdin, self.stderr))
            if code != 0:  # a failed or aborted edit (e.g. vim's :cq) is not an edit
                raise PlanBuildError(
                    f"the editor ({editor}) exited {code}; the text was not changed",
                    "save and quit normally to keep an edit, or check VISUAL/EDITOR",
                    code=ExitCode.APPROVAL,
                )
            try:
                return path.read_text(encoding="utf-8")
            except UnicodeDecodeError as exc:
                raise PlanBuildError(
                    "the edited text is not valid UTF-8; it was not used",
                    "save the file as UTF-8 in your editor",
                    code=ExitCode.APPROVAL,
                ) from exc
        finally:
            path.unlink(missing_ok=True)


# --- the terminal itself ------------------------------------------------------------------


def isatty(stream: Any) -> bool:
    """Whether `stream` is a terminal (a closed or fake stream is not)."""
    try:
        return bool(stream is not None and stream.isatty())
    except (ValueError, AttributeError):
        return False


@contextlib.contextmanager
def controlling_terminal() -> Iterator[TerminalInteraction | None]:
    """Questions on /dev/tty, for a command whose stdin is piped data and whose stdout is its
    result; None when the process has no controlling terminal. Closed on the way out."""
    try:
        tty_in = open("/dev/tty", encoding="utf-8")  # noqa: SIM115 - closed below
    except OSError:
        yield None
        return
    try:
        tty_out = open("/dev/tty", "w", encoding="utf-8")  # noqa: SIM115 - closed below
    except OSError:
        tty_in.close()
        raise
    try:
        yield TerminalInteraction(stdin=tty_in, stderr=tty_out)
    finally:
        tty_in.close()
        tty_out.close()


@contextlib.contextmanager
def interruptible(*streams: Any) -> Iterator[None]:
    """Ctrl-C, SIGTERM and SIGHUP (a closed terminal) raise KeyboardInterrupt here (so every
    `finally` runs and proc.run kills a child's process tree); a repeated signal while that
    cleanup runs is ignored; the terminals among `streams` get their mode back as it was (an
    editor may have changed it)."""
    saved = _save_terminal(streams)
    try:
        with interrupts.stopping(once=True):
            yield
    finally:
        _restore_terminal(saved)


def _save_terminal(streams: tuple[Any, ...]) -> list[tuple[int, Any]]:
    import termios

    saved = []
    for stream in streams:
        if not isatty(stream):
            continue
        with contextlib.suppress(termios.error, OSError, ValueError):
            fd = stream.fileno()
            saved.append((fd, termios.tcgetattr(fd)))
    return saved


def _restore_terminal(saved: list[tuple[int, Any]]) -> None:
    import termios

    for fd, attrs in saved:
        with contextlib.suppress(termios.error, OSError, ValueError):
            termios.tcsetattr(fd, termios.TCSADRAIN, attrs)


_ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI (colours, cursor movement)
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC (titles, hyperlinks)
    r"|\x1b[@-_]"  # other two-byte escapes
)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def clean(text: str) -> str:
    """Text safe to show on a terminal: no escape sequences, no control characters but tab and
    newline, LF line ends (what a tool printed is shown before anyone approves it)."""
    text = _ANSI.sub("", text.replace("\r\n", "\n"))
    return _CONTROL.sub("", text)
