"""`plan-build setup`: turn the readiness report's failures into a plan, ask, run it, recheck.

Every failing check whose remedy is mechanical becomes a step that names what it changes and
the exact command (`setupplan`); every other failure is listed for the user to do. Steps run in
plan order (which is dependency order), each after a yes (or `--yes`), each checked after it
runs. A failed or declined step skips the steps that need it; earlier steps stay. plan-build
never uses sudo, never edits shell startup files and never pipes a download into a shell.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from plan_build.core import jsonout
from plan_build.core.context import Session
from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.core.interact import Choice
from plan_build.startup import preflight, preflighttable
from plan_build.startup.setupplan import plan
from plan_build.startup.setupstep import Options, Step

__all__ = ["Options", "Outcome", "execute", "render_plan", "report_outcome", "run", "run_step"]

Status = Literal["ok", "failed", "skipped", "declined", "not_run"]
CHOICES = [Choice("y", "yes"), Choice("n", "no"), Choice("a", "all"), Choice("q", "quit")]


@dataclass
class Outcome:
    id: str
    status: Status
    detail: str
    tail: tuple[str, ...] = ()
    remedy: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "status": self.status,
            "detail": self.detail,
            "tail": list(self.tail),
            "remedy": self.remedy,
        }


def render_plan(steps: Sequence[Step], session: Session) -> str:
    runnable = [s for s in steps if s.runs]
    yours = [s for s in steps if not s.runs]
    if not steps:
        return "setup: nothing to do"
    lines = [f"setup plan: {len(runnable)} step(s) to run, {len(yours)} for you"]
    number = {s.id: i for i, s in enumerate(runnable, 1)}
    for s in runnable:
        lines.append(f"  {number[s.id]}. {s.title}")
        lines.append(f"     runs     {s.command}")
        if s.changes:
            lines.append(f"     changes  {', '.join(s.changes)}")
        if s.needs:
            lines.append(f"     needs    step {', '.join(str(number[n]) for n in s.needs)}")
    if yours:
        lines.append("  for you (plan-build does not do these):")
        for s in yours:
            lines.append(f"  - {s.title}")
            lines.append(f"     {session.console.arrow()} {s.command}")
    return "\n".join(lines)


def execute(session: Session, steps: Sequence[Step], *, yes: bool) -> list[Outcome]:
    con = session.console
    runnable = [s for s in steps if s.runs]
    number = {s.id: i for i, s in enumerate(runnable, 1)}
    outcomes: dict[str, Outcome] = {}
    ask, stopped = not yes, False
    for step in runnable:
        n = number[step.id]
        blocked = [d for d in step.needs if outcomes[d].status != "ok"]
        if blocked:
            why = ", ".join(f"step {number[d]} {outcomes[d].status}" for d in blocked)
            outcomes[step.id] = Outcome(step.id, "skipped", f"needs {why}")
        elif stopped:
            outcomes[step.id] = Outcome(step.id, "not_run", "you quit")
        else:
            answer = "y"
            if ask:
                answer = session.ui.choose(f"{n}. {step.title}?", CHOICES, default="n")
            if answer == "a":
                ask = False
            if answer == "q":
                stopped = True
                outcomes[step.id] = Outcome(step.id, "not_run", "you quit")
            elif answer == "n":
                outcomes[step.id] = Outcome(step.id, "declined", "you said no")
            else:
                con.say(f"{n}. {step.title}\n   $ {step.command}")
                outcomes[step.id] = run_step(step)
        report_outcome(session, n, step, outcomes[step.id])
    return list(outcomes.values())


def run_step(step: Step) -> Outcome:
    if step.action is None:  # the user's own item: never run
        return Outcome(step.id, "not_run", "yours to do")
    try:
        result = step.action()
    except PlanBuildError as exc:
        return Outcome(step.id, "failed", exc.what, (), exc.fix or step.remedy)
    if not result.ok:
        return Outcome(step.id, "failed", result.detail, result.tail, step.remedy)
    problem = step.verify() if step.verify else None
    if problem:
        after = step.remedy if step.remedy_if_done is None else step.remedy_if_done
        return Outcome(step.id, "failed", problem, result.tail, after or None)
    return Outcome(step.id, "ok", result.detail, result.tail)


def report_outcome(session: Session, n: int, step: Step, out: Outcome) -> None:
    con = session.console
    if out.status in ("ok", "failed"):  # under the step's own `$ command` line
        con.say(f"   {con.mark('pass' if out.status == 'ok' else 'fail')} {out.detail}")
    else:
        con.say(f"{n}. {step.title}\n   {con.mark('skip')} {out.status}: {out.detail}")
    if out.status == "failed":
        for line in out.tail:
            con.say(f"       | {line}")
        if out.remedy:
            con.say(f"       {con.arrow()} {out.remedy}")


def run(session: Session, opts: Options) -> None:
    pf_opts = preflight.Options(mode=opts.mode, need_terminal=False)
    report = preflight.run(session, pf_opts)
    steps = plan(session, report, opts)
    con = session.console
    con.say(render_plan(steps, session))
    runnable = [s for s in steps if s.runs]
    data: dict[str, Any] = {"plan": [s.as_json() for s in steps], "outcomes": []}

    def emit(final: preflight.Report | None) -> None:
        if opts.json:
            data["report"] = final.as_json() if final else None
            jsonout.write(session.stdout, data)
            session.stdout.flush()

    if opts.dry_run:
        con.say("dry run: nothing was changed")
        emit(report)
        return
    if runnable:
        from plan_build.core.interact import agent_presence, agent_refusal

        found = agent_presence(session.env)
        if found.reason is not None:  # an agent may show the plan, never approve changing it
            emit(None)
            raise agent_refusal("setup (it changes this machine)", "plan-build setup", found.reason)
    if runnable and not opts.yes and not session.ui.interactive:
        emit(None)
        raise PlanBuildError(
            f"setup needs your approval for {len(runnable)} step(s) and there is no terminal "
            "to ask",
            "rerun from a terminal, or with --yes to run the whole plan above",
            code=ExitCode.APPROVAL,
        )
    outcomes = execute(session, steps, yes=opts.yes) if runnable else []
    data["outcomes"] = [o.as_json() for o in outcomes]
    final = preflight.run(session, pf_opts) if runnable else report
    con.say("")
    con.say(preflighttable.render(final, session))
    emit(final)
    failed = [o.id for o in outcomes if o.status == "failed"]
    if not final.ok:
        raise PlanBuildError(
            "not ready: " + ", ".join(c.id for c in final.blocking),
            None if opts.json else "apply the fixes shown above (→), then rerun plan-build setup",
            code=ExitCode.PREFLIGHT,
        )
    if failed:
        raise PlanBuildError(
            f"ready, but setup step(s) failed: {', '.join(failed)}",
            "see the failures above",
            code=ExitCode.BLOCKED,
        )
