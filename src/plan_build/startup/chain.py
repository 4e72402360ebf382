"""The launch chain shared by `plan` and `architect`:
preflight → identity → payload → (enhance) → (archive) → render → launch.

Preflight runs before the payload is read, so a user never types a request into a session that
cannot start. `--dry-run` writes nothing, asks nothing and ends with `would launch` or
`would not launch: …` (exit 3).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import NoReturn

from plan_build.core import agentmemory, brokerclient, guard, interact, sandbox, sessionvars
from plan_build.core.context import Session
from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.core.gitrepo import Repo
from plan_build.delivery import baseline
from plan_build.startup import (
    architectrecords,
    claudelayer,
    identity,
    launch,
    preflight,
    preflighttable,
)
from plan_build.startup.payload import read_payload


@dataclass(frozen=True)
class Request:
    mode: preflight.Mode
    yolo: bool = False
    prompt: bool = False
    new: bool = False
    dry_run: bool = False
    unguarded: bool = False  # launch without the sandbox: asked in words, recorded (ADR 0190)


def start(session: Session, req: Request) -> None:
    opts = preflight.Options(
        mode=req.mode,
        yolo=req.yolo,
        prompt=req.prompt,
        need_terminal=not req.dry_run,
        unguarded=req.unguarded,
    )
    blockers: list[str] = []
    report = checked(session, opts, blockers, dry_run=req.dry_run)
    repo = report.repo
    if repo is None:  # only reachable in a dry run: settle() raised otherwise
        raise preflight.blocked([c for c in report.checks if c.id == "git.worktree"])
    project_id = resolve_identity(session, repo, dry_run=req.dry_run, blockers=blockers)
    hooks_switched_off(session, repo, dry_run=req.dry_run, blockers=blockers)
    payload = read_payload(session.stdin, console=session.console)
    context: dict[str, object] = {
        "repo_root": str(repo.root),
        "skill_path": str(session.resources.skill(req.mode).resolve()),
        "project_id": project_id,
        "memory_mode": report.memory_mode,
        "payload": payload,
        "original": None,
        "session_id": None,
        "release_id": session.resources.release_id,
    }
    if req.prompt:
        context.update(enhanced_context(session, report, payload, dry_run=req.dry_run))
    session_id = baseline.new_id()  # named in the prompt and the environment only for real
    context["session_id"] = None if req.dry_run else session_id
    if req.mode == "architect":
        # planned first (nothing moved yet), so every check below runs before any side effect
        context.update(
            architect_context(session, repo, new=req.new, dry_run=True, announce=req.dry_run)
        )
    env_added = agentmemory.memory_env(project_id, degraded=report.memory_mode == "degraded")
    if session.resources.release_path is not None:
        env_added[sessionvars.RELEASE] = str(session.resources.release_path)
    if not req.dry_run:
        env_added[sessionvars.SESSION] = session_id
    # the broker's request folder is the one place outside the work tree the session writes
    spool = brokerclient.spool_dir(session.env, session_id)
    policy = None if req.unguarded else claudelayer.policy_for(repo, session.env, (spool,))
    env_added[sessionvars.GUARD] = "unguarded" if req.unguarded else "sandbox"
    layer = claudelayer.plan(repo, req.mode, policy=policy)
    env_added[claudelayer.HOOK_ENV] = claudelayer.hook_program()

    def build() -> launch.Launch:
        return launch.build(
            session,
            mode=req.mode,
            repo_root=repo.root,
            context=context,
            env_added=env_added,
            yolo=req.yolo,
            blockers=tuple(blockers),
            settings=layer,
        )

    plan = build()
    if req.dry_run:
        session.stdout.write(launch.dry_run_text(plan))
        session.stdout.flush()
        if plan.blockers:
            raise PlanBuildError(
                "dry run: the launch would be blocked",
                "see `would not launch:` above",
                code=ExitCode.PREFLIGHT,
            )
        return
    chosen = settle_guard(session, session_id, policy)
    # Side effects, in order: the guard record, the baseline (so the archive move belongs to the
    # session's change), then the archive. A failed archive aborts the launch with the records
    # in place.
    guard.record_guard(repo.state_dir, chosen)
    baseline.capture(
        repo,
        session_id=session_id,
        mode=req.mode,
        memory_mode=report.memory_mode,
        memory_reason=degraded_reason(report, session.env),
        guard=chosen.mode,
    )
    # the first checkpoint hashes every file: taken here, with no hook deadline (ADR 0198)
    from plan_build.core import checkpoint

    checkpoint.take(repo, "session start")
    if req.mode == "architect" and req.new:
        done = architect_context(session, repo, new=True, dry_run=False)
        if done != {k: context[k] for k in done}:  # another run took the planned archive name
            context.update(done)
            plan = build()
    go(session, plan, req, report.memory_mode)


def settle_guard(session: Session, session_id: str, policy: sandbox.Policy | None) -> guard.Guard:
    """The session's guard: the sandbox (preflight proved it can run here), or — only when
    the person asked with --unguarded — no sandbox, confirmed by typing the words on the
    terminal, never by an agent (interact.require_person refuses inside one)."""
    if policy is not None:
        how = f"sandbox active: bubblewrap, policy {policy.digest()}"
        return guard.new_guard(session_id, "sandbox", how, policy.digest())
    presence = interact.require_person(
        session.env, what="a session without the sandbox", command="plan-build plan --unguarded"
    )
    words = guard.UNGUARDED_WORDS
    question = (
        "Without the sandbox, Claude's commands and the project's checks can commit, push and "
        f"rewrite git state. Type `{words}` to launch that way"
    )
    if not session.ui.type_words(question, words):
        raise PlanBuildError(
            "the unguarded launch was not confirmed",
            "start again without --unguarded (install bubblewrap and socat: plan-build setup)",
            code=ExitCode.APPROVAL,
        )
    return guard.new_guard(session_id, "unguarded", f"typed `{words}` {presence}", None)


def checked(
    session: Session, opts: preflight.Options, blockers: list[str], *, dry_run: bool
) -> preflight.Report:
    """Preflight, settled with the user; a dry run only records what would block (and renders
    the prompt as degraded when memory alone fails, since that is what the user could choose)."""
    report = preflight.run(session, opts)
    if not dry_run:
        return preflight.settle(report, session, opts)
    session.console.say(preflighttable.render(report, session))
    failing = [c for c in report.checks if c.failed]
    if failing:
        from plan_build.startup import fixable

        blocker = "preflight failed: " + ", ".join(c.id for c in failing)
        can = fixable.by_setup(session, failing)
        if len(can) == len(failing):
            blocker += f" (run {fixable.setup_command(opts.mode)}: it fixes them)"
        elif can:
            blocker += (
                f" (run {fixable.setup_command(opts.mode)} first: it fixes "
                f"{', '.join(c.id for c in can)}; then the fixes shown above)"
            )
        blockers.append(blocker)
    if failing and all(c.degradable for c in failing):
        report.memory_mode = "degraded"
    return report


def degraded_reason(report: preflight.Report, env: Mapping[str, str]) -> str | None:
    """Why memory is degraded, in the failing checks' own words (None when it is not),
    redacted: the baseline keeps it, and `status` and the report show it."""
    if report.memory_mode != "degraded":
        return None
    from plan_build.core import redact

    failing = [f"{c.id}: {c.detail}" for c in report.checks if c.failed and c.degradable]
    text = "; ".join(redact.clean_many(failing, env)) or (
        "continued without memory at the user's choice"
    )
    return text if len(text) <= 240 else text[:237] + "..."


def go(session: Session, plan: launch.Launch, req: Request, memory_mode: str) -> NoReturn:
    workflow = "architect" if req.mode == "architect" else "standard"
    session.console.say(f"launching Claude Code ({workflow} workflow, memory {memory_mode}) …")
    launch.execute(plan, session)


def hooks_switched_off(session: Session, repo: Repo, *, dry_run: bool, blockers: list[str]) -> None:
    """Refuse to launch when a settings file turns every hook off: plan-build's layer would be
    inert from the first turn (the ConfigChange hook only guards changes made meanwhile)."""
    found = claudelayer.switched_off(repo, session.env)
    if not found:
        return
    what = f"Claude Code's hooks are switched off (disableAllHooks) in {', '.join(found)}"
    if dry_run:
        blockers.append(what)
        return
    raise PlanBuildError(
        what + "; plan-build's gates need them",
        'remove "disableAllHooks" from that file, then start again',
        code=ExitCode.PREFLIGHT,
    )


def resolve_identity(session: Session, repo: Repo, *, dry_run: bool, blockers: list[str]) -> str:
    ident = identity.read(repo)
    if ident is not None and ident.committed:
        return ident.value
    if ident is not None:  # present but not committed
        if dry_run:
            blockers.append(f"{identity.FILENAME} is not committed")
            return ident.value
        identity.require_committed(repo)
    proposal = identity.propose(repo)
    if dry_run:
        blockers.append(
            f"{identity.FILENAME} is missing (plan-build would propose "
            f'"{proposal}" and stop for you to commit it)'
        )
        return proposal
    identity.offer(session, repo, proposal)


def enhanced_context(
    session: Session,
    report: preflight.Report,
    payload: str,
    *,
    dry_run: bool,
) -> dict[str, object]:
    """The `--prompt` step: the approved text replaces the payload; the original stays only when
    the user asked to keep it. A dry run whose Auggie checks failed shows the request as typed."""
    from plan_build.startup import enhance

    if dry_run and any(c.failed and c.id in enhance.CHECK_IDS for c in report.checks):
        return {}
    approved = enhance.for_launch(session, payload)
    return {
        "payload": approved.text,
        "original": approved.original if approved.keep_original else None,
    }


def architect_context(
    session: Session, repo: Repo, *, new: bool, dry_run: bool, announce: bool = True
) -> dict[str, object]:
    if not new:
        return {"start_mode": "resume", "archived": [], "archive_dir": ""}
    result = architectrecords.archive(repo.root, dry_run=dry_run)
    rel = str(result.directory.relative_to(repo.root))
    if result.moved and announce:
        verb = "would archive" if dry_run else "archived"
        session.console.say(f"{verb} {', '.join(result.moved)} into {rel}")
    return {
        "start_mode": "archive-and-start-new",
        "archived": list(result.moved),
        "archive_dir": rel,
    }
