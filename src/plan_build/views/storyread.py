"""Reading a session's story from its records, without changing any of them.

The records: the baseline, the review workflows of the session's time (round files, review
and findings texts, the decisions ledger, approvals), the dispatch telemetry log with the
evidence blocks in TASKS.md (or in `docs/archive/*/TASKS.md` once `architect --new` archived
them), the verify record and the commit. A session's time runs from its baseline to its
commit (or now); a record of that time belongs to it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from plan_build.core import codexusage
from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.core.gitrepo import Repo
from plan_build.views import story as st
from plan_build.views import storydispatch

LOCATION = re.compile(r"(?<![\w/.-])([\w./-]+\.[A-Za-z0-9]+):(\d+)(?:-\d+)?")
PHASES = ("plan", "implement")
LIST_FIX = "see the sessions with: plan-build report --list"
REVIEWER_ROW = "reviewer (review rounds)"  # the telemetry table's row for Codex as reviewer


def _unknown_session(sid: str) -> PlanBuildError:
    return PlanBuildError(
        f"there is no session {sid} in this repository",
        LIST_FIX,
        code=ExitCode.USAGE,
    )


def session_ids(repo: Repo) -> list[tuple[str, str, str | None]]:
    """(id, started, committed) of every session this repository records, oldest first."""
    from plan_build.delivery import baseline

    return [(b.id, b.created, b.committed) for b in baseline.all_baselines(repo)]


# --- reviews --------------------------------------------------------------------------------


def _round(repo: Repo, wdir: Any, wf: Any, phase: str, rnd: int) -> st.RoundStory | None:
    from plan_build.review import ledger, roundfiles, steps, twins
    from plan_build.review.findings import decided, reason

    review = steps.read_optional(wdir.review(phase, rnd))
    record = roundfiles.load_round(wdir, phase, rnd)
    if review is None and record is None:
        return None
    responses = steps.read_optional(wdir.findings(phase, rnd)) or ""
    view = steps.view_of(replace(wf, phase=phase, round=rnd), wdir, review, responses)
    rows = ledger.Ledger.load(wdir.ledger).rows(phase, rnd) if wdir.ledger.exists() else []
    outcomes = {r.get("finding_id"): r.get("outcome") for r in rows}
    findings = []
    for f in view.findings:
        d = view.decisions.get(f.id)
        token = d.token if decided(d) and d is not None else None
        loc = LOCATION.search(f.text)
        mapped = ledger.MAPPING.get(token or "", ledger.UNDECIDED)[0]
        findings.append(
            st.FindingRow(
                f.id,
                f.severity,
                f.reviewer,
                f"{loc.group(1)}:{loc.group(2)}" if loc else None,
                f.text,
                token,
                reason(responses, d) if token and d is not None else None,
                outcomes.get(f.id) or mapped,
            )
        )
    reviewers: list[st.ReviewerRow] = []
    if record is not None:
        for name, run in record.reviewers.items():
            result = ("findings" if run.findings else "clean") if run.status == "ok" else run.status
            used = None if run.usage_sum is None else codexusage.sum_from_json(run.usage_sum)
            if used is None and name == "codex":  # a round recorded before usage was kept
                used = codexusage.Summed(codexusage.UNKNOWN, 1, 1)
            reviewers.append(st.ReviewerRow(name, result, run.seconds or None, run.reason, used))
    else:
        for name in sorted({f.reviewer for f in view.findings}):
            reviewers.append(st.ReviewerRow(name, "findings", None, None))
    approval = roundfiles.load_approval(wdir, phase, rnd)
    if approval is not None and twins.check(repo, wdir, phase, rnd) is not None:
        approval = None  # not made by review.approve: the story tells no approval (ADR 0192)
    return st.RoundStory(
        wf.id,
        phase,
        rnd,
        record.started_at if record else None,
        record.finished_at if record else None,
        tuple(reviewers),
        tuple(findings),
        approval.approved_at if approval else None,
    )


def _ledger_batches(wdir: Any, phase: str, rnd: int) -> list[tuple[str, int]]:
    """(when, how many) for each batch of decisions the ledger holds for a round."""
    from plan_build.review import ledger

    if not wdir.ledger.exists():
        return []
    batches: dict[str, int] = {}
    for row in ledger.Ledger.load(wdir.ledger).rows(phase, rnd):
        if row.get("decision") not in ("", "OPEN"):
            at = row.get("updated_at")
            batches[at] = batches.get(at, 0) + 1
    return sorted(batches.items())


def reviews(
    repo: Repo, cwd: Path, sid: str, start: str, end: str | None
) -> tuple[list[st.RoundStory], list[st.Event]]:
    from plan_build.review.folders import load_all  # broken folders are left out, as status does
    from plan_build.review.layout import WorkflowDir, find_root

    root = find_root(cwd, repo.root)
    rounds: list[st.RoundStory] = []
    events: list[st.Event] = []
    for wf in load_all(root):
        if not (wf.owned_by(sid) or storydispatch.within(wf.created_at, start, end)):
            continue
        wdir = WorkflowDir(root, wf.id)
        for phase in PHASES:
            last = wf.round if phase == wf.phase else 99
            for rnd in range(1, last + 1):
                got = _round(repo, wdir, wf, phase, rnd)
                if got is None:
                    if phase != wf.phase:
                        break
                    continue
                rounds.append(got)
                names = ", ".join(r.name for r in got.reviewers) or "no reviewer recorded"
                at = got.started_at or got.finished_at
                if at:
                    events.append(
                        st.Event(
                            "review", f"{phase} r{rnd}: {names}", at, _span(at, got.finished_at)
                        )
                    )
                for when, n in _ledger_batches(wdir, phase, rnd):
                    events.append(st.Event("decisions", f"{phase} r{rnd}: {n} decided", when))
    rounds.sort(key=lambda r: (r.started_at or "", r.workflow, PHASES.index(r.phase), r.round))
    return rounds, events


def _span(start: str | None, end: str | None) -> float | None:
    from plan_build.core import clock

    a, b = clock.parse(start or ""), clock.parse(end or "")
    return (b - a).total_seconds() if a and b else None


# --- verify, outcome ------------------------------------------------------------------------


TAIL_LINES = 15


def _tail(repo: Repo, sid: str, check_id: str) -> str:
    """The last lines of a verify command's log (verify names it after the command)."""
    from plan_build.delivery.baseline import sessions_dir

    if not check_id.startswith("command."):
        return ""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", check_id.removeprefix("command."))
    try:
        text = (sessions_dir(repo) / sid / "logs" / f"{safe}.log").read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-TAIL_LINES:])


def verification(repo: Repo, sid: str, tree: str | None) -> st.VerifyStory | None:
    from plan_build.delivery import verifyrecord

    record = verifyrecord.last_record(repo, sid)
    if record is None:
        return None
    rows = record.get("checks") if isinstance(record.get("checks"), list) else []
    change = record.get("change") if isinstance(record.get("change"), dict) else {}
    checked = change.get("tree") if isinstance(change, dict) else None
    return st.VerifyStory(
        record.get("when") if isinstance(record.get("when"), str) else None,
        bool(record.get("ok")),
        None if tree is None or not isinstance(checked, str) else checked != tree,
        tuple(
            st.VerifyCheck(
                str(c.get("id")),
                str(c.get("status")),
                str(c.get("detail") or ""),
                c.get("seconds") if isinstance(c.get("seconds"), int | float) else None,
                _tail(repo, sid, str(c.get("id"))),
            )
            for c in rows or []
            if isinstance(c, dict)
        ),
    )


def _outcome(repo: Repo, env: Mapping[str, str], cwd: Path, facts: Any) -> str:
    """What the header says: committed, ready, or what `commit` would still refuse for."""
    if facts.committed:
        return f"committed as {facts.committed[:12]}"
    from plan_build.delivery import baseline as baseline_mod
    from plan_build.views import missing, progress, reviews

    tree = facts.change.tree if facts.change is not None else None
    r = reviews.gather(repo, env, cwd, tree=tree, since=facts.started_at)
    t = progress.tasks(repo)
    # `commit`'s own judgement (delivery.readiness), as `status` asks it
    busy = baseline_mod.busy_state(repo)
    refused = missing.judged(repo, facts, r, busy, missing.repo_now(repo))
    lacking, _next = missing.what_is_missing(facts, r, t, refused)
    return "ready to commit" if not lacking else "missing: " + "; ".join(lacking)


def _diff(repo: Repo, change: Any) -> tuple[str, bool]:
    """The change's diff as far as the report can show it, and whether that is all of it: git
    is stopped past MAX_DIFF bytes (a 5,000-file change's whole diff took longer to read than
    the rest of the report to make; issue 36)."""
    if change is None or change.empty:
        return "", True
    from plan_build.core import proc
    from plan_build.core.gitrepo import git_argv, git_env

    argv = git_argv(
        ["diff", "--no-color", "--no-ext-diff", "--no-renames", change.baseline_tree, change.tree]
    )
    try:
        data, whole = proc.head_bytes(
            argv, limit=st.MAX_DIFF, cwd=repo.root, env=git_env(repo.env), timeout=600
        )
    except (proc.CommandFailed, proc.CommandTimeout):
        return "", True
    return data.decode("utf-8", "replace"), whole


def _known(repo: Repo, sid: str) -> bool:
    from plan_build.delivery import baseline as baseline_mod

    if any(known == sid for known, _, _ in session_ids(repo)):
        return True
    ref = baseline_mod.REF_PREFIX + sid  # its metadata lost, its pin kept: `load` recovers it
    return repo.git("rev-parse", "--verify", "--quiet", ref, check=False).ok


def gather(repo: Repo, env: Mapping[str, str], cwd: Path, session_id: str | None) -> st.Story:
    """The story of `session_id` (default: the session `status` is about)."""
    from plan_build.delivery import baseline as baseline_mod
    from plan_build.views import session

    if session_id is not None and not _known(repo, baseline_mod.validate_id(session_id)):
        raise _unknown_session(session_id)
    facts = session.gather(repo, env, session_id=session_id)
    start, end = facts.started_at, facts.committed_at
    rounds, review_events = reviews(repo, cwd, facts.id, start, end)
    tasks, task_events, tokens, recipes, archived = storydispatch.dispatches(
        repo, facts.id, start, end
    )
    reviewed = [rv.usage for r in rounds for rv in r.reviewers if rv.usage is not None]
    if reviewed:
        tokens = {**tokens, REVIEWER_ROW: codexusage.combined(reviewed)}
    tree = facts.change.tree if facts.change is not None and not facts.committed else None
    verify = verification(repo, facts.id, tree)
    events = [st.Event("baseline", "baseline", start), *review_events, *task_events]
    if verify is not None and verify.at:
        total = sum(c.seconds or 0.0 for c in verify.checks)
        events.append(
            st.Event(
                "verify",
                "verify: " + ("passed" if verify.ok else "failed"),
                verify.at,
                total or None,
            )
        )
    if facts.committed and facts.committed_at:
        events.append(st.Event("commit", f"commit {facts.committed[:12]}", facts.committed_at))
    if start:  # records stamp whole seconds: a start worked back from one can precede the baseline
        events = [
            e if e.kind == "baseline" or e.at >= start else replace(e, at=start) for e in events
        ]
    events.sort(key=lambda e: e.at)  # stable: the baseline stays first within its second
    change = facts.change
    diff, whole = _diff(repo, change)
    return st.Story(
        header=st.Header(
            facts.id,
            facts.mode,
            start,
            facts.branch,
            facts.baseline_commit,
            facts.committed,
            facts.committed_at,
            facts.memory.mode,
            facts.memory.reason,
            facts.identity.value,
            facts.baseline.guard,
            last_checkpoint=_last_checkpoint(repo),
        ),
        outcome=_outcome(repo, env, cwd, facts),
        files=tuple(
            st.FileRow(f.path, f.status, f.added, f.removed)
            for f in (change.files if change else ())
        ),
        diff=diff,
        diff_whole=whole,
        rounds=tuple(rounds),
        tasks=tuple(tasks),
        verify=verify,
        tokens=tokens,
        recipes=tuple(recipes),
        events=tuple(events),
        archived=archived,
    )


__all__ = ["LIST_FIX", "gather", "session_ids"]


def _last_checkpoint(repo: Repo) -> str | None:
    from plan_build.core import checkpoint

    return checkpoint.last_taken(repo)
