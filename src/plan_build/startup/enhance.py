"""Prompt enhancement through Augment's Auggie, approval-gated and interrupt-safe.

Auggie has no enhance-only command, and `--enhance-prompt` goes on to run the agent, so
plan-build asks Auggie itself, in print + ask mode (retrieval and non-editing tools only), to
rewrite the request and to answer between tags it then parses (docs/adr/0030). Unless the user
lets Auggie index the repository, Auggie runs in an empty temporary workspace (docs/adr/0031).
Nothing is used without the user's approval; Ctrl-C or SIGTERM at any point kills Auggie's
whole process tree, removes the temporary files and ends with exit 130 (docs/adr/0032).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from plan_build import interrupts, proc
from plan_build.checks import Check, Probe, run_concurrently
from plan_build.context import Session
from plan_build.errors import ExitCode, PlanBuildError
from plan_build.interact import Choice, TerminalInteraction, require_person
from plan_build.ui import Console

DEFAULT_TIMEOUT = 120.0
CHECK_TIMEOUT = 15.0
HEARTBEAT_EVERY = 15.0
TAG = "plan-build-enhanced"
MAX_REPLY_BYTES = 1024 * 1024  # a whole reply larger than this is not read at all
MAX_TEXT_BYTES = 64 * 1024  # an enhanced request larger than this is not offered
TURNS_PLAIN = 1  # no tools needed: one model turn answers
TURNS_INDEXING = 4  # room for a few codebase-retrieval calls before the answer
CHECK_IDS = ("tool.auggie", "auggie.login")
INSTALL = "npm install -g @augmentcode/auggie (needs Node 22+), then: auggie login"
LOGIN_FIX = "run: auggie login (or set AUGMENT_SESSION_AUTH to a session JSON)"

Source = Literal["enhanced", "edited", "original"]


@dataclass(frozen=True)
class Enhanced:
    text: str  # the approved text to launch with
    original: str  # the user's request as typed
    source: Source
    keep_original: bool  # the user asked to keep the original in the prompt's context section


class EnhanceFailure(Exception):
    """Auggie did not produce a usable enhanced request (the user chooses what next)."""

    def __init__(self, what: str, fix: str | None = None) -> None:
        super().__init__(what)
        self.what = what
        self.fix = fix


# --- configuration -----------------------------------------------------------------------


def timeout_from_config(repo_root: Path | None) -> float:
    """`enhance.timeout` from `.plan-build.yaml` (seconds), or DEFAULT_TIMEOUT."""
    if repo_root is None:
        return DEFAULT_TIMEOUT
    from plan_build import config

    cfg = config.load(repo_root)
    value = float(cfg.get("enhance.timeout", DEFAULT_TIMEOUT))
    if value <= 0:
        raise PlanBuildError(
            f"{cfg.path}: enhance.timeout must be more than 0 seconds, not {value:g}",
            f"set enhance.timeout to e.g. {DEFAULT_TIMEOUT:g} in {config.FILENAME}",
            code=ExitCode.USAGE,
        )
    return value


# --- preflight -----------------------------------------------------------------------------


def auggie_checks(env: Mapping[str, str], home: Path) -> list[Check]:
    """`tool.auggie` (on PATH and runs) and `auggie.login` (a non-empty, readable session)."""
    path = proc.which("auggie", env)
    return run_concurrently(
        [lambda: _tool_check(env, home, path), lambda: _login_check(env, home, path)]
    )


def preflight_probe(session: Session) -> Probe:
    """The two checks as one probe for preflight.Options.extra in `--prompt` mode."""
    return lambda: auggie_checks(session.env, session.home)


def _tool_check(env: Mapping[str, str], home: Path, path: str | None) -> Check:
    if path is None:
        return Check("tool.auggie", "fail", "auggie is not on PATH", INSTALL)
    try:
        r = proc.run([path, "--version"], cwd=home, env=env, timeout=CHECK_TIMEOUT)
    except proc.CommandTimeout:
        return Check(
            "tool.auggie",
            "fail",
            f"auggie --version did not answer in {CHECK_TIMEOUT:g}s",
            "run `auggie --version` yourself to see what it waits for",
        )
    except PlanBuildError as exc:
        return Check("tool.auggie", "fail", f"auggie at {path} cannot run: {exc.what}", exc.fix)
    if not r.ok:
        return Check(
            "tool.auggie",
            "fail",
            f"`auggie --version` exited {r.returncode} ({path})",
            "reinstall it: " + INSTALL,
        )
    m = re.search(r"\d+(?:\.\d+)+", r.stdout)
    version = m.group(0) if m else "(version unknown)"
    return Check("tool.auggie", "pass", f"auggie {version} ({path})")


def _session_problem(text: str) -> str | None:
    """Why a session JSON cannot log in, or None when it looks usable."""
    if not text.strip():
        return "is empty"
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return "is not valid JSON"
    if not isinstance(data, dict) or not str(data.get("accessToken") or "").strip():
        return "has no accessToken"
    return None


def _login_check(env: Mapping[str, str], home: Path, path: str | None) -> Check:
    """The session is read from AUGMENT_SESSION_AUTH or ~/.augment/session.json; never shown."""
    inline = env.get("AUGMENT_SESSION_AUTH", "")
    if inline.strip():
        problem = _session_problem(inline)
        if problem:
            return Check(
                "auggie.login",
                "fail",
                f"AUGMENT_SESSION_AUTH {problem}",
                "set it to the JSON that `auggie token print` shows after SESSION=, "
                "or unset it and run: auggie login",
            )
        return Check("auggie.login", "pass", "session from AUGMENT_SESSION_AUTH")
    file = home / ".augment" / "session.json"
    shown = f"~/{file.relative_to(home)}"
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Check(
            "auggie.login", "fail", f"not logged in to Augment ({shown} is missing)", LOGIN_FIX
        )
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        return Check(
            "auggie.login",
            "fail",
            f"{shown} cannot be read ({reason})",
            f"fix its permissions (chmod 600 {file}) or log in again: auggie login",
        )
    problem = _session_problem(text)
    if problem:
        return Check("auggie.login", "fail", f"{shown} {problem}", "log in again: auggie login")
    if path is None:  # the file looks right; tool.auggie reports the missing program
        return Check("auggie.login", "pass", f"session in {shown}")
    try:  # offline: it reads the file only. Its stdout holds the token: never shown or logged.
        r = proc.run([path, "token", "print"], cwd=home, env=env, timeout=CHECK_TIMEOUT)
    except PlanBuildError as exc:
        return Check("auggie.login", "fail", f"`auggie token print` failed: {exc.what}", LOGIN_FIX)
    if not r.ok:
        said = _tail(r.stderr, 1) or f"exit {r.returncode}"
        return Check("auggie.login", "fail", f"auggie does not accept {shown}: {said}", LOGIN_FIX)
    return Check("auggie.login", "pass", f"session in {shown}")


# --- the terminal for approvals -------------------------------------------------------------


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream is not None and stream.isatty())
    except (ValueError, AttributeError):
        return False


@contextlib.contextmanager
def approval_terminal(session: Session) -> Iterator[Session]:
    """`session` with its questions on a terminal.

    Its own interaction when that can ask; otherwise /dev/tty (stdin may be the request's pipe
    and stdout the approved text's). No terminal at all: exit 3 before anything runs.
    """
    if session.ui.interactive:
        yield session
        return
    try:
        tty_in = open("/dev/tty", encoding="utf-8")  # noqa: SIM115 - closed below
    except OSError:
        raise PlanBuildError(
            "prompt enhancement needs a terminal to ask for approval, and there is none",
            "run it from an interactive terminal (the request itself may still be piped in)",
            code=ExitCode.PREFLIGHT,
        ) from None
    try:
        tty_out = open("/dev/tty", "w", encoding="utf-8")  # noqa: SIM115 - closed below
    except OSError:
        tty_in.close()
        raise
    try:
        console = session.console if _isatty(session.console.stream) else Console(stream=tty_out)
        ui = TerminalInteraction(stdin=tty_in, stderr=tty_out)
        yield dataclasses.replace(session, ui=ui, console=console)
    finally:
        tty_in.close()
        tty_out.close()


# --- interruption ---------------------------------------------------------------------------


@contextlib.contextmanager
def interruptible(*streams: Any) -> Iterator[None]:
    """Ctrl-C, SIGTERM and SIGHUP (a closed terminal) raise KeyboardInterrupt here (so every
    `finally` runs and proc.run kills Auggie's process tree); a repeated signal while that
    cleanup runs is ignored; the terminal's mode is put back as it was (an editor may have
    changed it)."""
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
        if not _isatty(stream):
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


# --- running Auggie -------------------------------------------------------------------------


def retry_timeout(timeout: float) -> int:
    """Auggie's own retry bound: a quarter of ours, so its clearer message usually wins."""
    return max(1, int(timeout // 4))


def auggie_argv(
    instruction_file: Path, workspace: Path, *, indexing: bool, timeout: float
) -> list[str]:
    argv = [
        "auggie",
        "--print",
        "--quiet",
        "--ask",
        "--instruction-file",
        str(instruction_file),
        "--workspace-root",
        str(workspace),
        "--max-turns",
        str(TURNS_INDEXING if indexing else TURNS_PLAIN),
        "--retry-timeout",
        str(retry_timeout(timeout)),
    ]
    if indexing:
        argv.append("--allow-indexing")
    return argv


def auggie_env(env: Mapping[str, str]) -> dict[str, str]:
    out = dict(env)
    out["NO_COLOR"] = "1"
    out["AUGMENT_DISABLE_AUTO_UPDATE"] = "1"  # no update probe in a bounded one-shot run
    return out


def instruction(session: Session, payload: str, *, indexing: bool) -> str:
    from plan_build.render import render

    return render(
        session.resources.templates,
        "enhance/rewrite.md.j2",
        {"payload": payload, "indexing": indexing, "tag": TAG},
    )


def run_auggie(
    session: Session, repo_root: Path | None, payload: str, *, indexing: bool, timeout: float
) -> str:
    """One Auggie run; the enhanced text, or EnhanceFailure saying what went wrong."""
    text = instruction(session, payload, indexing=indexing)
    from plan_build import fsutil  # temp names carry their owner: a killed run's are swept

    fsutil.sweep(Path(tempfile.gettempdir()), "plan-build-enhance")
    tmp = Path(tempfile.mkdtemp(prefix=f"plan-build-enhance{fsutil.owner_tag()}"))
    try:
        request = tmp / "request.md"
        request.write_text(text, encoding="utf-8")
        workspace = repo_root if indexing and repo_root is not None else tmp / "workspace"
        workspace.mkdir(exist_ok=True)
        argv = auggie_argv(request, workspace, indexing=indexing, timeout=timeout)
        guard = _ChangeGuard.start(repo_root, session.env) if indexing else None

        def heartbeat(elapsed: float) -> None:
            session.console.say(f"  still waiting for Auggie ({elapsed:.0f}s of {timeout:g}s)")

        session.console.say(
            f"asking Auggie to enhance the request (up to {timeout:g}s; Ctrl-C stops) …"
        )
        try:
            result = proc.run(
                argv,
                cwd=workspace,
                env=auggie_env(session.env),
                timeout=timeout,
                heartbeat=heartbeat,
                heartbeat_every=HEARTBEAT_EVERY,
            )
        except proc.CommandTimeout:
            if guard is not None:
                guard.check()
            raise EnhanceFailure(
                f"Auggie did not answer within {timeout:g}s and was stopped",
                "check your network, or raise enhance.timeout in .plan-build.yaml",
            ) from None
        if guard is not None:
            guard.check()
        return parse_reply(result, payload)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@dataclass
class _ChangeGuard:
    """Auggie is told not to edit files and runs in ask mode; this verifies it did not."""

    repo: Any
    before: str

    @classmethod
    def start(cls, repo_root: Path | None, env: Mapping[str, str]) -> _ChangeGuard | None:
        if repo_root is None:
            return None
        from plan_build import gitrepo, snapshot

        try:
            repo = gitrepo.discover(repo_root, env)
            return cls(repo, snapshot.worktree_tree(repo))
        except PlanBuildError:
            return None

    def check(self) -> None:
        from plan_build import snapshot

        after = snapshot.worktree_tree(self.repo)
        if after == self.before:
            return
        paths = snapshot.changed_paths(self.repo, self.before, after)
        shown = ", ".join(paths[:5]) + (" …" if len(paths) > 5 else "")
        raise PlanBuildError(
            f"files changed in {self.repo.root} while Auggie ran: {shown}",
            "look at the changes (git status, git diff) before going on; nothing was launched",
            code=ExitCode.BLOCKED,
        )


_ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI (colours, cursor movement)
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC (titles, hyperlinks)
    r"|\x1b[@-_]"  # other two-byte escapes
)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def clean(text: str) -> str:
    """Text safe to show on a terminal: no escape sequences, no control characters but tab and
    newline, LF line ends."""
    text = _ANSI.sub("", text.replace("\r\n", "\n"))
    return _CONTROL.sub("", text)


def _tail(text: str, lines: int = 3) -> str:
    rows = [clean(line).strip()[:300] for line in text.splitlines()]
    return "\n    ".join([r for r in rows if r][-lines:])


def _size(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MiB" if n >= 1024 * 1024 else f"{n / 1024:.0f} KiB"


def parse_reply(result: proc.Completed, payload: str) -> str:
    """The text between the tags of a successful reply, or EnhanceFailure."""
    if not result.ok:
        said = _tail(result.stderr) or _tail(result.stdout)
        low = (result.stderr + result.stdout).lower()
        if "not currently logged in" in low or "no auth provided" in low or "unauthorized" in low:
            fix = LOGIN_FIX + ", then retry"
        elif "retry timeout" in low or "temporarily unavailable" in low:
            fix = "Augment's service could not be reached: check the network, then retry"
        else:
            fix = "read Auggie's message above; retry, or use your original request"
        return _fail(f"Auggie exited {result.returncode}" + (f":\n    {said}" if said else ""), fix)
    reply = result.stdout
    size = len(reply.encode("utf-8", "surrogatepass"))
    if size > MAX_REPLY_BYTES:
        return _fail(
            f"Auggie's reply is {_size(size)}, more than the {_size(MAX_REPLY_BYTES)} plan-build "
            "reads; it was discarded",
            "retry, or use your original request",
        )
    if "\ufffd" in reply and "\ufffd" not in payload:
        return _fail(
            "Auggie's reply is not valid UTF-8, so it cannot be shown faithfully; it was discarded",
            "retry, or use your original request",
        )
    text = clean(reply)
    if not text.strip():
        return _fail("Auggie returned an empty reply", "retry, or use your original request")
    opening, closing = f"<{TAG}>", f"</{TAG}>"
    start = text.rfind(opening)
    if start < 0:
        return _fail(
            f"Auggie's reply has no {opening} block, so the enhanced request cannot be told "
            "apart from the rest of the reply",
            "retry, or use your original request",
        )
    end = text.find(closing, start)
    if end < 0:
        return _fail(
            f"Auggie's reply is cut off: the {opening} block is never closed",
            "retry, or use your original request",
        )
    body = text[start + len(opening) : end].strip("\n").rstrip()
    if not body.strip():
        return _fail("Auggie's enhanced request is empty", "retry, or use your original request")
    if len(body.encode()) > MAX_TEXT_BYTES:
        return _fail(
            f"Auggie's enhanced request is {_size(len(body.encode()))}, more than the "
            f"{_size(MAX_TEXT_BYTES)} plan-build accepts; it was discarded",
            "retry, or use your original request",
        )
    return body + "\n"


def _fail(what: str, fix: str) -> str:
    raise EnhanceFailure(what, fix)


# --- the step -------------------------------------------------------------------------------


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


def enhance_payload(
    session: Session,
    repo_root: Path | None,
    payload: str,
    *,
    timeout: float,
    question: str = "Use this request?",
    ask_keep_original: bool = True,
    command: str = "plan-build enhance",
) -> Enhanced:
    """Ask Auggie for an enhanced request and have the user approve, edit or reject it.

    Raises PlanBuildError(code=APPROVAL) when the user stops and PlanBuildError(code=PREFLIGHT)
    when there is no terminal to ask (before Auggie runs), or when it runs inside an agent
    session (exit 4: the approval is the user's). KeyboardInterrupt (Ctrl-C, SIGTERM or SIGHUP)
    propagates after Auggie's process tree and the temporary files are gone.
    """
    require_person(session.env, what="approving an enhanced request", command=command)
    if not session.ui.interactive:
        raise PlanBuildError(
            "prompt enhancement needs a terminal to ask for approval, and there is none",
            "run it from an interactive terminal",
            code=ExitCode.PREFLIGHT,
        )
    try:
        with interruptible(getattr(session.ui, "stdin", None), session.stdin):
            return _enhance(
                session,
                repo_root,
                payload,
                timeout=timeout,
                question=question,
                ask_keep_original=ask_keep_original,
            )
    except KeyboardInterrupt:
        session.console.say("")
        session.console.say("prompt enhancement interrupted: Auggie is stopped, nothing was used")
        raise


def _enhance(
    session: Session,
    repo_root: Path | None,
    payload: str,
    *,
    timeout: float,
    question: str,
    ask_keep_original: bool,
) -> Enhanced:
    indexing = ask_indexing(session, repo_root) if repo_root is not None else False
    while True:
        try:
            text = run_auggie(session, repo_root, payload, indexing=indexing, timeout=timeout)
            break
        except EnhanceFailure as failure:
            session.console.say(f"prompt enhancement failed: {failure.what}")
            if failure.fix:
                session.console.say(f"  {session.console.arrow()} {failure.fix}")
            answer = session.ui.choose(
                "Your request was not enhanced.",
                [Choice("r", "retry"), Choice("o", "original request"), Choice("s", "stop")],
                default="s",
            )
            if answer == "o":
                return Enhanced(payload, payload, "original", False)
            if answer == "s":
                raise stopped("the failed prompt enhancement") from None
    return review(session, payload, text, question=question, ask_keep_original=ask_keep_original)


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


def for_launch(session: Session, repo_root: Path, payload: str) -> Enhanced:
    """The `--prompt` step of plan: questions on a terminal, timeout from the config."""
    timeout = timeout_from_config(repo_root)
    with approval_terminal(session) as asking:
        return enhance_payload(
            asking,
            repo_root,
            payload,
            timeout=timeout,
            question="Launch Claude Code with this request?",
            command="plan-build plan --prompt",
        )


def standalone(session: Session) -> None:
    """`plan-build enhance`: terminal, checks, request, enhancement, approved text on stdout."""
    from plan_build import gitrepo
    from plan_build.startup.payload import read_payload

    try:
        repo_root: Path | None = gitrepo.discover(session.cwd, session.env).root
    except PlanBuildError:  # outside a work tree: nothing to index, no config
        repo_root = None
    timeout = timeout_from_config(repo_root)
    with approval_terminal(session) as asking:
        failed = [c for c in auggie_checks(session.env, session.home) if c.failed]
        if failed:
            con = asking.console
            for c in failed:
                mark = con.mark(c.status)
                con.say(f"  {mark} {c.id:<12} {c.detail}")
                if c.remediation:
                    con.say(f"  {' ' * len(mark)} {'':<12} {con.arrow()} {c.remediation}")
            raise PlanBuildError(
                f"prompt enhancement is not ready ({', '.join(c.id for c in failed)})",
                "apply the fixes shown above and rerun",
                code=ExitCode.PREFLIGHT,
            )
        payload = read_payload(session.stdin, console=asking.console)
        result = enhance_payload(
            asking,
            repo_root,
            payload,
            timeout=timeout,
            question="Print this request as the result?",
            ask_keep_original=False,
        )
    text = result.text if result.text.endswith("\n") else result.text + "\n"
    session.stdout.write(text)
    session.stdout.flush()


__all__ = [
    "CHECK_IDS",
    "DEFAULT_TIMEOUT",
    "EnhanceFailure",
    "Enhanced",
    "approval_terminal",
    "auggie_checks",
    "enhance_payload",
    "for_launch",
    "preflight_probe",
    "standalone",
    "timeout_from_config",
]
