"""Prompt enhancement through Augment's Auggie, approval-gated and interrupt-safe.

Auggie has no enhance-only command, and `--enhance-prompt` goes on to run the agent, so
plan-build asks Auggie itself, in print + ask mode (retrieval and non-editing tools only), to
rewrite the request and to answer between tags it then parses (docs/adr/0030). Unless the user
lets Auggie index the repository, Auggie runs in an empty temporary workspace (docs/adr/0031).
Nothing is used without the user's approval; Ctrl-C or SIGTERM at any point kills Auggie's
whole process tree, removes the temporary files and ends with exit 130 (docs/adr/0032).

Here: Auggie's run and the rewrite (instruction, argv, reply parsing, the no-edit guard) and
the steps. Its readiness checks are startup/enhancechecks.py, the approval loop
startup/enhanceapproval.py, the terminal handling interact.py.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from plan_build.core import proc
from plan_build.core.context import Session
from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.core.interact import Choice, clean, interruptible, require_person
from plan_build.startup.enhanceapproval import (
    Enhanced,
    approval_terminal,
    ask_indexing,
    review,
    stopped,
)
from plan_build.startup.enhancechecks import CHECK_IDS, LOGIN_FIX, require_ready, tail

if TYPE_CHECKING:
    from plan_build.core.config import Config
    from plan_build.core.gitrepo import Repo

DEFAULT_TIMEOUT = 120.0
HEARTBEAT_EVERY = 15.0
TAG = "plan-build-enhanced"
MAX_REPLY_BYTES = 1024 * 1024  # a whole reply larger than this is not read at all
MAX_TEXT_BYTES = 64 * 1024  # an enhanced request larger than this is not offered
TURNS_PLAIN = 1  # no tools needed: one model turn answers
TURNS_INDEXING = 4  # room for a few codebase-retrieval calls before the answer


class EnhanceFailure(Exception):
    """Auggie did not produce a usable enhanced request (the user chooses what next)."""

    def __init__(self, what: str, fix: str | None = None) -> None:
        super().__init__(what)
        self.what = what
        self.fix = fix


# --- configuration -----------------------------------------------------------------------


def timeout_from_config(cfg: Config | None) -> float:
    """`enhance.timeout` from the Session's `.plan-build.yaml` (seconds), or DEFAULT_TIMEOUT
    (None: outside a work tree, no config)."""
    if cfg is None:
        return DEFAULT_TIMEOUT
    from plan_build.core import config

    value = float(cfg.get("enhance.timeout", DEFAULT_TIMEOUT))
    if value <= 0:
        raise PlanBuildError(
            f"{cfg.path}: enhance.timeout must be more than 0 seconds, not {value:g}",
            f"set enhance.timeout to e.g. {DEFAULT_TIMEOUT:g} in {config.FILENAME}",
            code=ExitCode.USAGE,
        )
    return value


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
    from plan_build.core.render import render

    return render(
        session.resources.templates,
        "enhance/rewrite.md.j2",
        {"payload": payload, "indexing": indexing, "tag": TAG},
    )


def run_auggie(
    session: Session, repo: Repo | None, payload: str, *, indexing: bool, timeout: float
) -> str:
    """One Auggie run; the enhanced text, or EnhanceFailure saying what went wrong."""
    text = instruction(session, payload, indexing=indexing)
    from plan_build.core import fsutil  # temp names carry their owner: a killed run's are swept

    fsutil.sweep(Path(tempfile.gettempdir()), "plan-build-enhance")
    tmp = Path(tempfile.mkdtemp(prefix=f"plan-build-enhance{fsutil.owner_tag()}"))
    try:
        request = tmp / "request.md"
        request.write_text(text, encoding="utf-8")
        workspace = repo.root if indexing and repo is not None else tmp / "workspace"
        workspace.mkdir(exist_ok=True)
        argv = auggie_argv(request, workspace, indexing=indexing, timeout=timeout)
        guard = _ChangeGuard.start(repo) if indexing else None

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

    repo: Repo
    before: str

    @classmethod
    def start(cls, repo: Repo | None) -> _ChangeGuard | None:
        """Watch the Session's repository (None: outside a work tree, nothing to watch)."""
        if repo is None:
            return None
        from plan_build.core import snapshot

        try:
            return cls(repo, snapshot.worktree_tree(repo))
        except PlanBuildError:
            return None

    def check(self) -> None:
        from plan_build.core import snapshot

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


def _size(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MiB" if n >= 1024 * 1024 else f"{n / 1024:.0f} KiB"


def parse_reply(result: proc.Completed, payload: str) -> str:
    """The text between the tags of a successful reply, or EnhanceFailure."""
    if not result.ok:
        said = tail(result.stderr) or tail(result.stdout)
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


def enhance_payload(
    session: Session,
    repo: Repo | None,
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
                repo,
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
    repo: Repo | None,
    payload: str,
    *,
    timeout: float,
    question: str,
    ask_keep_original: bool,
) -> Enhanced:
    indexing = ask_indexing(session, repo.root) if repo is not None else False
    while True:
        try:
            text = run_auggie(session, repo, payload, indexing=indexing, timeout=timeout)
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


def for_launch(session: Session, payload: str) -> Enhanced:
    """The `--prompt` step of plan: questions on a terminal, the Session's repository, the
    timeout from its config."""
    repo = session.repo
    timeout = timeout_from_config(session.config)
    with approval_terminal(session) as asking:
        return enhance_payload(
            asking,
            repo,
            payload,
            timeout=timeout,
            question="Launch Claude Code with this request?",
            command="plan-build plan --prompt",
        )


def standalone(session: Session) -> None:
    """`plan-build enhance`: terminal, checks, request, enhancement, approved text on stdout."""
    from plan_build.startup.payload import read_payload

    try:
        repo: Repo | None = session.repo
    except PlanBuildError:  # outside a work tree: nothing to index, no config
        repo = None
    timeout = timeout_from_config(session.config if repo is not None else None)
    with approval_terminal(session) as asking:
        require_ready(session, asking.console)
        payload = read_payload(session.stdin, console=asking.console)
        result = enhance_payload(
            asking,
            repo,
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
    "enhance_payload",
    "for_launch",
    "standalone",
    "timeout_from_config",
]
