"""One review round, start to finish, and the ledger sync every command shares.

A round runs under the workflow's lock: the plan is checked, the change fingerprinted
(implementation rounds), Codex reviews from the rendered prompt, CodeRabbit reviews the local
change (implementation rounds), and only then are the round record, the review file and the
ledger written - each atomically. A reviewer that fails leaves the round at step `working`
with nothing but its record and a log written, so `plan-build review` simply tries again.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from plan_build import proc
from plan_build.dispatch import recipe
from plan_build.errors import ExitCode, PlanBuildError
from plan_build.fsutil import atomic_write
from plan_build.review import coderabbit, codex, plans, prompts
from plan_build.review.findings import (
    CODERABBIT_MARKER,
    SEVERITIES,
    TAG,
    Finding,
    all_tag_ids,
    decisions,
    extract,
)
from plan_build.review.layout import WorkflowDir, stamp
from plan_build.review.ledger import Ledger
from plan_build.review.records import (
    ReviewerRun,
    RoundRecord,
    load_round,
    save_round,
    sha256_file,
)
from plan_build.review.reviewers import Outcome, duration, end_live_line, heartbeat
from plan_build.review.runtime import ReviewContext, changed_since_head
from plan_build.review.steps import RoundView, Step, inspect, read_optional
from plan_build.review.workflow import Workflow, save

FILE_MODE = 0o644
DIR_MODE = 0o755
NO_FINDINGS_RESPONSE = "No findings in this round; nothing to decide (written by plan-build).\n"
TOKENS = {"plan": "ACCEPT | REJECT | DEFER", "implement": "FIX | REJECT | WONTFIX"}
PHASE_NAME = {"plan": "plan", "implement": "implementation"}


def phase_round(phase: str, round: int) -> str:
    return f"{PHASE_NAME.get(phase, phase)} round {round}"


def require_codex(ctx: ReviewContext) -> None:
    if proc.which("codex", ctx.env) is None:
        raise PlanBuildError(
            "codex is not installed or not on PATH; nothing was changed",
            "install the Codex CLI (npm install -g @openai/codex) and log in (codex login)",
            code=ExitCode.PREFLIGHT,
        )


def sync_ledger(ctx: ReviewContext, view: RoundView) -> Ledger:
    """Bring the current round's ledger rows up to date (writes only when they changed)."""
    ledger = Ledger.load(view.wdir.ledger)
    if view.reviewed:
        ledger.sync(view.phase, view.round, view.entries(), ctx.now())
    if ledger.changed:
        view.wdir.path.mkdir(parents=True, exist_ok=True)
        ledger.save()
    return ledger


def prior_findings(wdir: WorkflowDir, phase: str, round: int) -> list[prompts.PriorFinding]:
    """The previous round's findings and their decisions, for a re-review."""
    if round <= 1:
        return []
    review = read_optional(wdir.review(phase, round - 1))
    if not review or not review.strip():
        return []
    found = extract(review)
    path = wdir.findings(phase, round - 1)
    responses = read_optional(path)
    decided = decisions(found, responses, path) if responses else {}
    out = []
    for f in found:
        d = decided.get(f.id)
        out.append(
            prompts.PriorFinding(f.id, f.severity, f.reviewer, f.text, d.token if d else "OPEN")
        )
    return out


def ensure_plan(ctx: ReviewContext, wf: Workflow, wdir: WorkflowDir) -> str:
    """The canonical plan's text; in the plan phase an empty plan.md is copied again from
    its recorded source (or, failing that, the session's native plan)."""
    current = read_optional(wdir.plan)
    if current is not None and current.strip():
        return current
    if wf.phase == "implement":
        raise PlanBuildError(
            f"{ctx.rel(wdir.plan)} is missing or empty; the implementation has no approved plan "
            "to be reviewed against",
            "restore the file, or run plan-build review.done and start a new workflow",
            code=ExitCode.USAGE,
        )
    if wf.plan_source_path:
        source = ctx.root / wf.plan_source_path
        data = plans.read_plan(source, wf.plan_source_path)
    else:
        source = plans.native_plan(ctx.env, ctx.session())
        data = plans.read_plan(source, str(source))
        wf.plan_source_path = str(source)
    atomic_write(wdir.plan, data, mode=FILE_MODE)
    return data.decode("utf-8", "replace")


def _taken(text: str) -> dict[str, int]:
    """The highest number Codex used per severity (CodeRabbit's ids continue after it)."""
    taken = dict.fromkeys(SEVERITIES, 0)
    for m in TAG.finditer(text):
        taken[m.group(1)] = max(taken[m.group(1)], int(m.group(2)))
    return taken


def _count_line(found: Sequence[Finding], reviewer: str) -> str:
    mine = [f for f in found if f.reviewer == reviewer]
    if not mine:
        return "no findings"
    parts = []
    for sev in SEVERITIES:
        n = sum(1 for f in mine if f.severity == sev)
        if n:
            parts.append(f"{n} {sev.lower()}")
    return f"{len(mine)} finding{'s' if len(mine) != 1 else ''} ({', '.join(parts)})"


def _report(ctx: ReviewContext, run: ReviewerRun, found: Sequence[Finding]) -> None:
    mark = ctx.console.mark(
        "pass" if run.clean else ("warn" if run.status == "skipped" else "fail")
    )
    if run.clean:
        detail = f"{_count_line(found, run.name)} · {duration(run.seconds)}"
    else:
        detail = f"{run.status}: {run.reason}"
    ctx.console.say(f"  {mark} {run.name:<11} {detail}")
    if run.log:
        ctx.console.say(f"      output kept in {run.log}")


def _as_run(outcome: Outcome, ids: list[str], root_rel: str | None) -> ReviewerRun:
    return ReviewerRun(
        name=outcome.name,
        status=outcome.status,
        reason=outcome.reason,
        seconds=round(outcome.seconds, 3),
        findings=ids,
        argv=list(outcome.argv),
        log=root_rel,
    )


@dataclass
class RoundResult:
    view: RoundView
    record: RoundRecord
    problems: list[Problem] = field(default_factory=list)


def _ask_codex(
    ctx: ReviewContext, wdir: WorkflowDir, context: prompts.PromptContext, *, live: bool
) -> Outcome:
    beat, every = heartbeat(ctx.console, "codex", "reviewing", live=live)
    try:
        return codex.review(
            lambda strict: prompts.build(ctx.templates, context, strict=strict),
            cwd=ctx.repo.root,
            env=ctx.env,
            out=wdir.lock / "codex-last-message.md",
            log_dir=wdir.artifacts,
            timeout=codex.timeout_from(ctx.env, ctx.config.get("review.codex_timeout")),
            # the fixed recipe's reviewer role, unless codex-review's own override is set
            model=codex.model_from(ctx.env, ctx.config.get("review.codex_model"))
            or recipe.RECIPE.role(recipe.REVIEWER).model,
            beat=beat,
            beat_every=every,
            on_retry=lambda why: ctx.console.say(
                f"  codex answered without a readable review ({why}); asking once more"
            ),
        )
    finally:
        end_live_line(ctx.console)


def _ask_coderabbit(ctx: ReviewContext, wdir: WorkflowDir, cancel: threading.Event) -> Outcome:
    """CodeRabbit on the local change; runs beside Codex, so its heartbeat is plain lines."""
    configured = ctx.config.get("review.coderabbit_timeout")
    beat, every = heartbeat(ctx.console, "coderabbit", "reviewing", live=False)
    return coderabbit.review(
        cwd=ctx.repo.root,
        env=ctx.env,
        log_dir=wdir.artifacts,
        timeout=float(configured) if configured else coderabbit.DEFAULT_TIMEOUT,
        beat=beat,
        beat_every=every,
        cancel=cancel,
    )


def _prompt_context(
    ctx: ReviewContext,
    wf: Workflow,
    wdir: WorkflowDir,
    *,
    plan: str,
    focus: str | None,
    record: RoundRecord,
) -> prompts.PromptContext:
    changed = changed_since_head(ctx.repo, record.reviewed_tree) if record.reviewed_tree else []
    return prompts.PromptContext(
        project_id=prompts.project_id(ctx.repo.root),
        workflow=wf.id,
        phase=wf.phase,
        round=wf.round,
        task=wf.task or "(unspecified task)",
        plan=plan,
        focus=focus or None,
        prior_round=wf.round - 1 if wf.round > 1 else None,
        prior=prior_findings(wdir, wf.phase, wf.round),
        head=record.head,
        tree=record.reviewed_tree,
        changed=changed,
    )


def _codex_part(
    ctx: ReviewContext,
    wf: Workflow,
    wdir: WorkflowDir,
    context: prompts.PromptContext,
    *,
    record: RoundRecord,
    label: str,
    live: bool,
) -> str:
    """Codex's review of the round, recorded; a failed review leaves the round unreviewed."""
    outcome = _ask_codex(ctx, wdir, context, live=live)
    text = "\n".join(line for line in outcome.text.split("\n") if line.strip() != CODERABBIT_MARKER)
    found = extract(text) if outcome.ok else []
    run = _as_run(outcome, [f.id for f in found], ctx.rel(outcome.log) if outcome.log else None)
    record.reviewers["codex"] = run
    _report(ctx, run, found)
    if not outcome.ok:
        record.finished_at = stamp(ctx.now())
        save_round(wdir, record)
        save(wdir, wf, ctx.now())
        raise PlanBuildError(
            f"Codex did not review {label} ({run.status}: {run.reason}); the round stays "
            "unreviewed and no review file was written",
            "fix the cause, then run plan-build review to try the same round again",
            code=ExitCode.BLOCKED,
        )
    return text if text.endswith("\n") else text + "\n"


def run_round(
    ctx: ReviewContext, wf: Workflow, wdir: WorkflowDir, focus: str | None
) -> RoundResult:
    """Review the current round (its step must be `working`); the caller holds the lock."""
    label = phase_round(wf.phase, wf.round)
    wdir.artifacts.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    plan_text = ensure_plan(ctx, wf, wdir)
    require_codex(ctx)
    record = RoundRecord(
        phase=wf.phase,
        round=wf.round,
        started_at=stamp(ctx.now()),
        plan_sha256=sha256_file(wdir.plan),
    )
    if wf.phase == "implement":
        record.reviewed_tree = ctx.fingerprint()
        record.head = ctx.repo.head()
    context = _prompt_context(ctx, wf, wdir, plan=plan_text, focus=focus, record=record)
    ctx.console.say(f"reviewing {label} of workflow {wf.id}")
    # In an implementation round CodeRabbit reviews the same change while Codex does: a round
    # takes as long as the slower reviewer, not both added up.
    stop_rabbit = threading.Event()
    with ThreadPoolExecutor(max_workers=1) as pool:
        rabbit = (
            pool.submit(_ask_coderabbit, ctx, wdir, stop_rabbit)
            if wf.phase == "implement"
            else None
        )
        try:
            text = _codex_part(
                ctx, wf, wdir, context, record=record, label=label, live=rabbit is None
            )
            if rabbit is not None:
                cr = rabbit.result()
                part, ids = coderabbit.section(cr, _taken(text))
                text += part
                run = _as_run(cr, ids, ctx.rel(cr.log) if cr.log else None)
                record.reviewers["coderabbit"] = run
                _report(ctx, run, extract(text))
                record.tree_after = ctx.fingerprint()
        except KeyboardInterrupt:
            stop_rabbit.set()
            end_live_line(ctx.console)
            ctx.console.say(f"stopped: {label} stays unreviewed; no review file was written")
            raise
        except BaseException:
            stop_rabbit.set()
            raise
    record.finished_at = stamp(ctx.now())
    save_round(wdir, record)
    atomic_write(wdir.review(wf.phase, wf.round), text, mode=FILE_MODE)
    responses = wdir.findings(wf.phase, wf.round)
    if not all_tag_ids(text) and not responses.exists():
        atomic_write(responses, NO_FINDINGS_RESPONSE, mode=FILE_MODE)
    view = inspect(wf, wdir)
    sync_ledger(ctx, view)
    save(wdir, wf, ctx.now())
    ctx.console.say(f"  review    {ctx.rel(view.review_path)}")
    ctx.console.say(f"  findings  {ctx.rel(view.findings_path)}")
    if record.reviewed_tree is not None and record.tree_after != record.reviewed_tree:
        ctx.console.say(
            "  note: the change moved while it was being reviewed; this round is already stale"
        )
    return RoundResult(view, record, problems(ctx, view, record))


@dataclass(frozen=True)
class Problem:
    text: str
    waivable: bool = False  # approve may go ahead once the user confirms it on a terminal
    fix: str | None = None


def problems(ctx: ReviewContext, view: RoundView, record: RoundRecord | None) -> list[Problem]:
    """Why this round cannot be approved as it stands (empty: it can)."""
    out: list[Problem] = []
    if view.step == Step.WORKING:
        out.append(
            Problem(
                f"{phase_round(view.phase, view.round)} has not been reviewed yet",
                fix="run plan-build review",
            )
        )
        return out
    if view.step == Step.REVIEW:
        decide = (
            f"write 'Decision: {TOKENS[view.phase]}' under each finding id in "
            f"{ctx.rel(view.findings_path)}"
        )
        if not (view.responses and view.responses.strip()):
            where = ctx.rel(view.findings_path)
            out.append(
                Problem(f"no decisions are written yet ({where} is missing or empty)", fix=decide)
            )
        if view.undecided:
            ids = ", ".join(f.id for f in view.undecided)
            out.append(Problem(f"findings without a decision: {ids}", fix=decide))
    for f in view.findings:
        if view.token(f) != "DEFER":
            continue
        if f.severity == "LOW":
            out.append(Problem(f"{f.id} (low) is deferred: that needs your approval", True))
        else:
            out.append(
                Problem(
                    f"{f.id} is deferred, but only LOW findings may be deferred",
                    fix=f"decide {f.id} differently ({TOKENS[view.phase]}) in "
                    f"{ctx.rel(view.findings_path)}",
                )
            )
    if record is not None:
        for run in record.not_clean():
            text = f"{run.name} did not review this round ({run.status}: {run.reason})"
            out.append(Problem(text, True))
    return out


def stale(
    ctx: ReviewContext, record: RoundRecord | None
) -> tuple[str | None, str | None, bool | None]:
    """(reviewed tree, current tree, stale) for an implementation round."""
    reviewed = record.reviewed_tree if record else None
    current = ctx.fingerprint()
    if reviewed is None:
        return None, current, None
    return reviewed, current, reviewed != current


def record_of(view: RoundView) -> RoundRecord | None:
    return load_round(view.wdir, view.phase, view.round)


__all__ = [
    "NO_FINDINGS_RESPONSE",
    "TOKENS",
    "Problem",
    "RoundResult",
    "ensure_plan",
    "phase_round",
    "prior_findings",
    "problems",
    "record_of",
    "require_codex",
    "run_round",
    "stale",
    "sync_ledger",
]
