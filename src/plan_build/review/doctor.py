"""`review.doctor`: why review commands might not find or run the right workflow.

Read-only (it never claims a workflow or removes a lock) and always exits 0; the first
problem found is named as the root cause, with codex-review's names where they exist.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from plan_build.core import claudesessions as sessions
from plan_build.core import gitrepo, pins, tools
from plan_build.core.checks import Check, to_json
from plan_build.core.context import Session
from plan_build.core.errors import PlanBuildError
from plan_build.core.ui import Console
from plan_build.review.folders import Skipped, scan
from plan_build.review.gate import record_of
from plan_build.review.layout import WorkflowDir, find_root
from plan_build.review.ledger import Ledger
from plan_build.review.lock import holder, is_stale
from plan_build.review.resolution import Resolution, resolve
from plan_build.review.runtime import fingerprint
from plan_build.review.steps import inspect
from plan_build.review.workflowfile import Workflow

ROOT_CAUSES = (
    ("tool.codex", ("fail",), "codex-missing"),
    ("claude.session", ("fail", "warn"), "no-claude-session"),
    ("workflow.resolution", ("fail",), "workflow-resolution"),
    ("workflow.resolution", ("warn",), "no-session-workflow"),
    ("workflow.ownership", ("fail", "warn"), "workflow-ownership"),
    ("workflow.artifacts", ("fail", "warn"), "artifacts"),
    ("workflow.lock", ("fail", "warn"), "workflow-lock"),
    ("workflow.change", ("fail", "warn"), "stale-review"),
    ("workflow.skipped", ("warn",), "unreadable-workflow"),
    ("git.worktree", ("fail",), "not-a-git-repository"),
)
VERSION_TIMEOUT = 15.0
LABELS = {
    "git.worktree": "git work tree",
    "tool.codex": "Codex CLI",
    "tool.coderabbit": "CodeRabbit CLI",
    "claude.session": "Claude session",
    "workflow.resolution": "workflow",
    "workflow.ownership": "ownership",
    "workflow.artifacts": "artifacts",
    "workflow.lock": "lock",
    "workflow.change": "reviewed change",
    "workflow.skipped": "skipped folders",
}


@dataclass
class DoctorResult:
    root: str | None
    checks: list[Check] = field(default_factory=list)

    @property
    def root_cause(self) -> str:
        for check_id, statuses, cause in ROOT_CAUSES:
            if any(c.id == check_id and c.status in statuses for c in self.checks):
                return cause
        return "healthy"

    def as_json(self) -> dict[str, Any]:
        return {
            "ok": not any(c.failed for c in self.checks),
            "root": self.root,
            "root_cause": self.root_cause,
            "checks": to_json(self.checks),
        }


def _tool(name: str, missing: str, fix: str, s: Session) -> Check:
    a = tools.version(name, env=s.env, home=s.home, cwd=s.cwd, timeout=VERSION_TIMEOUT)
    if a.path is None:
        return Check(f"tool.{name}", missing, f"{name} is not on PATH", fix)  # type: ignore[arg-type]
    return Check(f"tool.{name}", "pass", f"{(a.ok and a.line) or '?'} ({a.path})")


def _session_check(
    env: dict[str, str], parents: Callable[[], list[int]] | None
) -> tuple[Check, sessions.ClaudeSession | None]:
    try:
        session = sessions.resolve(env, parents=parents or sessions.ancestors)
    except sessions.SessionError as exc:
        return Check("claude.session", "fail", exc.what, exc.fix), None
    if session is None:
        return (
            Check(
                "claude.session",
                "warn",
                "no Claude Code session among this process's ancestors",
                "run review commands from Claude Code, or name a workflow with --workflow ID",
            ),
            None,
        )
    detail = f"{session.session_id} (pid {session.pid}, via {session.source})"
    return Check("claude.session", "pass", detail), session


def _resolution_check(res: Resolution | None, error: PlanBuildError | None) -> Check:
    if error is not None:
        return Check("workflow.resolution", "fail", error.what, error.fix)
    wf = res.workflow if res else None
    if wf is None:
        return Check(
            "workflow.resolution",
            "warn",
            "no active workflow for this session",
            "start one with plan-build review.plan",
        )
    detail = f"{wf.id} ({wf.phase} round {wf.round})"
    if res is not None and res.claim:
        detail += "; unowned, the next command claims it"
    return Check("workflow.resolution", "pass", detail)


def _ownership_check(every: list[Workflow], res: Resolution | None) -> Check:
    active = [w for w in every if w.active]
    notes = []
    unowned = [w.id for w in active if not w.owner_session_id]
    if unowned:
        notes.append(f"unowned active workflows: {', '.join(unowned)}")
    owners: dict[str, list[str]] = {}
    for w in active:
        if w.owner_session_id:
            owners.setdefault(w.owner_session_id, []).append(w.id)
    notes.extend(f"session {o} owns {', '.join(ids)}" for o, ids in owners.items() if len(ids) > 1)
    if res is not None and res.orphans:
        notes.append(f"owned by ended sessions: {', '.join(res.orphans)}")
    if not notes:
        return Check(
            "workflow.ownership", "pass", f"{len(active)} active workflow(s), each with one owner"
        )
    return Check(
        "workflow.ownership",
        "warn",
        "; ".join(notes),
        "review commands run from Claude Code claim an unowned workflow; finish abandoned "
        "ones with plan-build review.done --workflow ID",
    )


def _workflow_checks(repo: gitrepo.Repo, root: Path, wf: Workflow) -> list[Check]:
    wdir = WorkflowDir(root, wf.id)
    try:
        view = inspect(wf, wdir)
        Ledger.load(wdir.ledger).rows(wf.phase, wf.round)
        record = record_of(view)
    except PlanBuildError as exc:
        return [Check("workflow.artifacts", "fail", exc.what, exc.fix)]
    out = []
    empty = [
        wdir.rel(p)
        for p in (view.review_path, view.findings_path)
        if p.exists() and p.stat().st_size == 0
    ]
    if not wdir.artifacts.is_dir():
        out.append(Check("workflow.artifacts", "warn", "the artifacts directory is missing"))
    elif empty:
        out.append(Check("workflow.artifacts", "warn", f"empty files: {', '.join(empty)}"))
    else:
        out.append(Check("workflow.artifacts", "pass", f"step {view.step.value}; ledger readable"))
    if not wdir.lock.is_dir():
        out.append(Check("workflow.lock", "pass", "free"))
    elif is_stale(wdir.lock):
        detail = f"stale lock (pid {holder(wdir.lock)}); the next command clears it"
        out.append(Check("workflow.lock", "warn", detail))
    else:
        detail = f"a review is running (pid {holder(wdir.lock)})"
        out.append(Check("workflow.lock", "warn", detail, "wait for it to finish"))
    if wf.phase == "implement" and view.reviewed:
        reviewed = record.reviewed_tree if record else None
        if reviewed is None:
            out.append(Check("workflow.change", "warn", "this round's reviewed change is unknown"))
        elif reviewed != fingerprint(repo, root):
            out.append(
                Check(
                    "workflow.change",
                    "warn",
                    "the change moved since this round reviewed it",
                    "plan-build review.repeat",
                )
            )
        else:
            out.append(Check("workflow.change", "pass", f"tree {reviewed[:12]} is current"))
    return out


def _skipped_check(skipped: list[Skipped]) -> Check:
    if not skipped:
        return Check("workflow.skipped", "pass", "every workflow folder is readable")
    return Check(
        "workflow.skipped",
        "warn",
        "; ".join(f"{s.id}: {s.why}" for s in skipped),
        "review commands skip these folders: repair their workflow.json or move them out of "
        ".claude/codex-review/workflows",
    )


def run(s: Session, parents: Callable[[], list[int]] | None = None) -> DoctorResult:
    env = s.env
    try:
        repo = s.repo
    except PlanBuildError as exc:
        return DoctorResult(None, [Check("git.worktree", "fail", exc.what, exc.fix)])
    root = find_root(s.cwd, repo.root)
    out = DoctorResult(str(root))
    out.checks.append(Check("git.worktree", "pass", str(repo.root)))
    out.checks.append(
        _tool("codex", "fail", f"install the Codex CLI ({pins.install_hint('codex')})", s)
    )
    out.checks.append(
        _tool("coderabbit", "warn", "install CodeRabbit: https://docs.coderabbit.ai/cli", s)
    )
    check, session = _session_check(env, parents)
    out.checks.append(check)
    every, skipped = scan(root)
    out.checks.append(_skipped_check(skipped))
    res: Resolution | None = None
    error: PlanBuildError | None = None
    try:
        res = resolve(root, session, env)
    except PlanBuildError as exc:
        error = exc
    out.checks.append(_resolution_check(res, error))
    out.checks.append(_ownership_check(every, res))
    if res is None or res.workflow is None:
        out.checks.append(Check("workflow.artifacts", "warn", "no workflow resolved"))
        return out
    out.checks.extend(_workflow_checks(repo, root, res.workflow))
    return out


def print_report(result: DoctorResult, console: Console) -> None:
    console.say(f"review doctor · {result.root or '(no repository)'}")
    console.say()
    for c in result.checks:
        mark = console.mark(c.status)
        width = 1 if console.fancy else 4
        console.say(f"  {mark:<{width}} {LABELS.get(c.id, c.id):<16} {c.detail}")
        if c.remediation and c.status != "pass":
            console.say(f"  {'':<{width}} {'':<16} {console.arrow()} {c.remediation}")
    console.say()
    console.say(f"root cause: {result.root_cause}")


__all__ = ["DoctorResult", "print_report", "run"]
