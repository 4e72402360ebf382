"""One review round, start to finish, and the ledger sync every command shares.

A round runs under the workflow's lock: the plan is checked, the change fingerprinted
(implementation rounds), Codex reviews from the rendered prompt, CodeRabbit reviews the local
change (implementation rounds), and only then are the round record, the review file and the
ledger written - each atomically. A reviewer that fails leaves the round at step `working`
with nothing but its record and a log written, so `plan-build review` simply tries again.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from plan_build.core import codexusage, pins, proc
from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.core.fsutil import atomic_write
from plan_build.dispatch import recipe
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
from plan_build.review.gate import (  # re-exported: callers long found them here
    REPEAT,
    TOKENS,
    Problem,
    blocking,
    phase_round,
    problems,
    record_of,
    short,
    stale,
    sync_ledger,
)
from plan_build.review.layout import WorkflowDir, stamp
from plan_build.review.ledger import Ledger
from plan_build.review.reviewers import (
    Outcome,
    Progress,
    duration,
    findings_state,
    heartbeat_every,
)
from plan_build.review.roundfiles import (
    ReviewerRun,
    RoundRecord,
    save_round,
    sha256_file,
)
from plan_build.review.runtime import ReviewContext, changed_since_head
from plan_build.review.steps import RoundView, inspect, read_optional, view_of
from plan_build.review.workflowfile import Workflow, save

FILE_MODE = 0o644
DIR_MODE = 0o755
NO_FINDINGS_RESPONSE = "No findings in this round; nothing to decide (written by plan-build).\n"


def require_codex(ctx: ReviewContext) -> None:
    if proc.which("codex", ctx.env) is None:
        raise PlanBuildError(
            "codex is not installed or not on PATH; nothing was changed",
            f"install the Codex CLI ({pins.install_hint('codex')}) and log in (codex login)",
            code=ExitCode.PREFLIGHT,
        )


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
    decided = decisions(found, responses) if responses else {}
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
    if run.usage_sum is not None:
        detail += f" · {codexusage.short_sum(codexusage.sum_from_json(run.usage_sum))}"
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
        exit_code=outcome.exit_code,
        stderr_tail=outcome.stderr_tail,
        usage_sum=outcome.usage_sum(),
    )


@dataclass
class RoundResult:
    view: RoundView
    record: RoundRecord
    problems: list[Problem] = field(default_factory=list)
    early: bool = False  # the findings file existed before this review was written


def _ask_codex(
    ctx: ReviewContext, wdir: WorkflowDir, context: prompts.PromptContext, progress: Progress
) -> Outcome:
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
        on_retry=lambda why: progress.say(
            f"  codex answered without a readable review ({why}); asking once more"
        ),
    )


def _ask_coderabbit(
    ctx: ReviewContext, wdir: WorkflowDir, cancel: threading.Event, progress: Progress
) -> Outcome:
    """CodeRabbit on the local change, beside Codex; it reports to the shared progress line."""
    configured = ctx.config.get("review.coderabbit_timeout")
    outcome = coderabbit.review(
        cwd=ctx.repo.root,
        env=ctx.env,
        log_dir=wdir.artifacts,
        timeout=float(configured) if configured else coderabbit.DEFAULT_TIMEOUT,
        cancel=cancel,
    )
    progress.finish("coderabbit", findings_state(outcome, len(outcome.findings)))
    return outcome


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


def _reviewers(
    ctx: ReviewContext, wf: Workflow, wdir: WorkflowDir, context: prompts.PromptContext
) -> tuple[Outcome, Outcome | None]:
    """Codex (and, in implementation rounds, CodeRabbit beside it) under one progress line.
    If Codex does not review, CodeRabbit is stopped."""
    implement = wf.phase == "implement"
    names = ["codex", "coderabbit"] if implement else ["codex"]
    stop_rabbit = threading.Event()
    with (
        Progress(ctx.console, names, every=heartbeat_every(ctx.env)) as progress,
        ThreadPoolExecutor(max_workers=1) as pool,
    ):
        rabbit = (
            pool.submit(_ask_coderabbit, ctx, wdir, stop_rabbit, progress) if implement else None
        )
        try:
            outcome = _ask_codex(ctx, wdir, context, progress)
        except BaseException:
            stop_rabbit.set()
            raise
        count = len(extract(outcome.text)) if outcome.ok else 0
        progress.finish("codex", findings_state(outcome, count))
        if not outcome.ok or rabbit is None:
            stop_rabbit.set()  # the round stays unreviewed: CodeRabbit's review is not needed
            return outcome, None
        return outcome, rabbit.result()


def _set_aside(path: Path) -> Path:
    """Move a review file that is not a review out of the way, keeping its bytes."""
    digits = str(secrets.randbelow(10**6)).zfill(6)
    kept = path.with_name(f"{path.stem}.not-a-review.{digits}.md")
    path.rename(kept)
    return kept


def _write_round(
    ctx: ReviewContext, wf: Workflow, wdir: WorkflowDir, record: RoundRecord, text: str
) -> tuple[RoundView, bool]:
    """Write the round's record, review, findings note and ledger rows - after working all of
    them out in memory, so a ledger that refuses the sync (exit 2) leaves none of them written.
    Returns the round as written and whether its findings file was there before."""
    responses = wdir.findings(wf.phase, wf.round)
    early = responses.is_file()
    note = not all_tag_ids(text) and not responses.exists()
    decided = read_optional(responses) or (NO_FINDINGS_RESPONSE if note else None)
    ledger = Ledger.load(wdir.ledger)
    ledger.sync(wf.phase, wf.round, view_of(wf, wdir, text, decided).entries(), ctx.now())
    review_path = wdir.review(wf.phase, wf.round)
    if inspect(wf, wdir).malformed is not None and review_path.is_file():
        kept = _set_aside(review_path)
        ctx.console.say(f"  the earlier {review_path.name} was not a review; kept as {kept.name}")
    save_round(wdir, record)
    atomic_write(review_path, text, mode=FILE_MODE)
    if note:
        atomic_write(responses, NO_FINDINGS_RESPONSE, mode=FILE_MODE)
    if ledger.changed:
        ledger.save()
    view = inspect(wf, wdir)
    save(wdir, wf, ctx.now())
    return view, early


def run_round(
    ctx: ReviewContext, wf: Workflow, wdir: WorkflowDir, focus: str | None
) -> RoundResult:
    """Review the current round (its step must be `working`); the caller holds the lock.

    Everything the round writes (record, review, findings note, ledger rows) is worked out in
    memory first, so a refusal - e.g. a ledger row it cannot read - writes none of it."""
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
    try:
        outcome, cr = _reviewers(ctx, wf, wdir, context)
    except KeyboardInterrupt:
        ctx.console.say(f"stopped: {label} stays unreviewed; no review file was written")
        raise
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
    text = text if text.endswith("\n") else text + "\n"
    if cr is not None:
        part, ids = coderabbit.section(cr, _taken(text))
        text += part
        rabbit_run = _as_run(cr, ids, ctx.rel(cr.log) if cr.log else None)
        record.reviewers["coderabbit"] = rabbit_run
        _report(ctx, rabbit_run, extract(text))
        record.tree_after = ctx.fingerprint()
    record.finished_at = stamp(ctx.now())
    view, early = _write_round(ctx, wf, wdir, record, text)
    ctx.console.say(f"  review    {ctx.rel(view.review_path)}")
    ctx.console.say(f"  findings  {ctx.rel(view.findings_path)}")
    if record.reviewed_tree is not None and record.tree_after != record.reviewed_tree:
        ctx.console.say(
            "  note: the change moved while it was being reviewed; this round is already stale"
        )
    return RoundResult(view, record, blocking(ctx, view, record), early=early)


__all__ = [
    "NO_FINDINGS_RESPONSE",
    "REPEAT",
    "TOKENS",
    "Problem",
    "RoundResult",
    "blocking",
    "ensure_plan",
    "phase_round",
    "prior_findings",
    "problems",
    "record_of",
    "require_codex",
    "run_round",
    "short",
    "stale",
    "sync_ledger",
]
