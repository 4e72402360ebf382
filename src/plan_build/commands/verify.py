"""Session-end tasks: baseline, status, verify, commit, report (thin wrappers over the steps)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from plan_build.cli.strict import command
from plan_build.core import jsonout
from plan_build.core.context import Session
from plan_build.core.errors import ExitCode, PlanBuildError, usage
from plan_build.core.ui import Console

if TYPE_CHECKING:  # the steps load only when a task runs: startup stays light
    from plan_build.core.checks import Check
    from plan_build.core.gitrepo import Repo
    from plan_build.delivery.baseline import Baseline

MODES = ("standard", "architect")


def _open() -> tuple[Session, Repo]:
    session = Session.from_process()
    return session, session.repo


def _print_json(session: Session, data: Any) -> None:
    jsonout.write(session.stdout, data)
    session.stdout.flush()


def print_checks(console: Console, rows: Sequence[Check]) -> None:
    width = max((len(c.id) for c in rows), default=0) + 2
    for c in rows:
        mark = console.mark(c.status)
        console.say(f"  {mark:<4} {c.id:<{width}}{c.detail}")
        if c.remediation and c.status in ("fail", "warn"):
            console.say(f"  {'':<4} {'':<{width}}{console.arrow()} {c.remediation}")


def _where(base: Baseline) -> str:
    head = base.head[:12] if base.head else "no commit yet"
    return f"{base.branch or 'detached HEAD'} @ {head}"


@command(
    help={
        "id": "session id to use (default: a new time-based id)",
        "mode": "record the session's workflow: standard or architect",
        "json": "print the baseline as JSON on stdout instead of its id",
    }
)
def baseline(c: Any, id: str | None = None, mode: str | None = None, json: bool = False) -> None:
    """Snapshot the repository as the session's starting point (plan/architect do it at launch)."""
    from plan_build.delivery import baseline as baseline_mod
    from plan_build.delivery import commit as commit_mod

    if mode is not None and mode not in MODES:
        raise usage(
            f"--mode must be standard or architect, not {mode!r}",
            "run: plan-build baseline --mode architect",
        )
    session, repo = _open()
    commit_mod.tidy(repo)
    base = baseline_mod.capture(repo, session_id=id, mode=mode)
    kept = baseline_mod.pre_existing(repo, base)
    session.console.say(
        f"baseline {base.id} · {_where(base)} · {kept} path(s) with uncommitted changes kept apart"
    )
    if json:
        _print_json(session, base.as_json())
    else:
        session.stdout.write(base.id + "\n")
        session.stdout.flush()


@command(help={"json": "print the same facts as JSON on stdout (every key always present)"})
def status(c: Any, json: bool = False) -> None:
    """Where the session stands on one screen: change, reviews, tasks, verify, what is missing."""
    from plan_build.views import status as view

    view.show(Session.from_process(), json=json)  # also run without Invoke (plan_build.main)


@command(
    name="verify",
    help={
        "json": "print the report as JSON on stdout",
        "mode": "standard or architect (default: the session's mode, else detected)",
    },
)
def verify_task(c: Any, json: bool = False, mode: str | None = None) -> None:
    """Verify the intended change: project checks, whitespace, secrets, records, links."""
    from plan_build.delivery import baseline as baseline_mod
    from plan_build.delivery import verify as verify_mod

    session, repo = _open()
    cfg = session.config
    base = baseline_mod.current(repo, session.env)
    con = session.console

    def progress(text: str) -> None:
        con.say(f"  {con.arrow()} {text}")

    report = verify_mod.run(
        repo, base, config=cfg, env=session.env, mode_flag=mode, progress=progress
    )
    con.say(f"verify · session {base.id} · {report.change.summary()} · {report.mode} mode")
    print_checks(con, report.checks)
    if json:
        _print_json(session, report.as_json())
    if not report.ok:
        failed = [c.id for c in report.checks if c.failed]
        yours = set(failed) <= verify_mod.ACCEPTABLE_AT_COMMIT
        raise PlanBuildError(
            f"verification failed: {', '.join(failed)}",
            "only you can accept that: run plan-build commit yourself, at a terminal, or take "
            "them out and run plan-build verify again"
            if yours
            else "fix what is listed above, then run plan-build verify again",
            code=ExitCode.BLOCKED,
        )
    from plan_build.core.interact import next_command

    con.say(f"verified · {next_command(session.env, 'plan-build commit')}")


@command(
    help={
        "message": "the commit message (otherwise your editor opens)",
    }
)
def commit(c: Any, message: str | None = None) -> None:
    """Make one commit of exactly the intended change, after approval. Never pushes."""
    from plan_build.delivery import baseline as baseline_mod
    from plan_build.delivery import commit as commit_mod

    session, repo = _open()
    commit_mod.tidy(repo)
    base = baseline_mod.current(repo, session.env)
    out = commit_mod.run(
        repo,
        base,
        ui=session.ui,
        console=session.console,
        env=session.env,
        message=message,
    )
    subject = out.message.split("\n", 1)[0]
    session.console.say(
        f"committed {out.commit[:12]} on {out.branch or 'detached HEAD'}: {subject} "
        "(nothing was pushed)"
    )
    if out.interrupted:
        session.console.say("note: Ctrl-C arrived while committing; the commit was finished first")
    session.stdout.write(out.commit + "\n")
    session.stdout.flush()


@command(
    help={
        "session": "the session to report (default: this worktree's session, as status)",
        "format": "html (default: one self-contained page) or md (for a pull request)",
        "out": "write here (default: .git/plan-build/sessions/<id>/report.<format>)",
        "list": "list the sessions this repository records, and write nothing",
    }
)
def report(
    c: Any,
    session: str | None = None,
    format: str = "html",
    out: str | None = None,
    list: bool = False,
) -> None:
    """The whole session as a page: timeline, change, reviews, tasks, verify, telemetry."""
    from pathlib import Path

    from plan_build.views import report as view
    from plan_build.views import storyread

    if format not in view.FORMATS:
        raise usage(f"--format must be html or md, not {format!r}", "plan-build report --format md")
    ses, repo = _open()
    if list:
        rows = storyread.session_ids(repo)
        for sid, started, committed in rows:
            state = f"committed as {committed[:12]}" if committed else "not committed"
            ses.stdout.write(f"{sid}  started {started}  {state}\n")
        if not rows:
            ses.console.say("no session recorded yet (plan-build plan or architect starts one)")
        ses.stdout.flush()
        return
    path = view.make(
        repo,
        ses.env,
        ses.cwd,
        home=ses.home,
        templates=ses.resources.templates,
        session_id=session or None,
        fmt=format,
        out=Path(out) if out else None,
    )
    ses.console.say(f"report written: {path}")
    ses.stdout.write(f"{path}\n")
    ses.stdout.flush()


TASKS: list[Any] = [baseline, status, verify_task, commit, report]
