"""Architect-mode tasks: `tasks` (list, lint, stats) and `dispatch TASK-ID`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from invoke.context import Context
from invoke.exceptions import Exit

from plan_build.cli.strict import command
from plan_build.core import codexusage, jsonout
from plan_build.core.context import Session
from plan_build.core.errors import ExitCode, PlanBuildError

if TYPE_CHECKING:  # the steps load only when their command runs (startup is benchmarked)
    from plan_build.core.gitrepo import Repo
    from plan_build.dispatch import taskfile


@command(
    help={
        "json": "print the tasks and problems as JSON on stdout",
        "stats": "summarise dispatch telemetry (attempts, first-attempt success, exhausted caps)",
    }
)
def tasks(c: Context, json: bool = False, stats: bool = False) -> None:
    """List and lint the tasks in TASKS.md (errors name the task and the line)."""
    from plan_build.dispatch import taskfile, telemetry

    session = Session.from_process()
    repo = session.repo
    if stats:
        summary = telemetry.stats(repo.state_dir)
        if json:
            jsonout.write(session.stdout, summary)
        else:
            for line in stats_lines(summary):
                session.console.say(line)
        return
    tf = taskfile.read(repo.root / taskfile.FILENAME)
    tf.problems = sorted(
        [*tf.problems, *unmatched_scope(tf, repo)], key=lambda p: (p.line, p.level != "error")
    )
    if json:
        payload = {
            "ok": not tf.errors,
            "path": str(tf.path),
            "tasks": [t.as_json() for t in tf.tasks],
            "problems": [p.as_json() for p in tf.problems],
        }
        jsonout.write(session.stdout, payload)
    else:
        from plan_build.dispatch import wavestate

        for line in task_lines(tf):
            session.console.say(line)
        for task_id, state, where in wavestate.kept(repo):
            session.console.say(f"wave worktree kept: {task_id} ({state}) · {where}")
    if tf.errors:
        n = len(tf.errors)
        raise PlanBuildError(
            f"{taskfile.FILENAME} has {n} problem{'s' if n != 1 else ''}"
            + ("" if json else " (listed above)"),
            "fix the named lines, then run plan-build tasks again",
            code=ExitCode.USAGE,
        )


def unmatched_scope(tf: taskfile.TaskFile, repo: Repo) -> list[taskfile.Problem]:
    """Warnings for scope entries of unfinished tasks that match no file in the work tree."""
    from plan_build.dispatch import taskfile
    from plan_build.dispatch.runner import repo_files
    from plan_build.dispatch.scope import Scope
    from plan_build.dispatch.scope import problem as bad_entry

    files = repo_files(repo)
    out: list[taskfile.Problem] = []
    for task in tf.tasks:
        if task.status == taskfile.COMPLETE:
            continue
        entries = [(p, ln) for p, ln in zip(task.scope, task.scope_lines, strict=True)]
        good = [(p, ln) for p, ln in entries if bad_entry(p) is None]
        lines = dict(good)
        for pattern in Scope(tuple(p for p, _ in good), repo.names).unmatched(files):
            out.append(
                taskfile.Problem(
                    lines[pattern],
                    f"scope entry {pattern!r} matches no file yet (fine for a file the task "
                    "creates; otherwise check the spelling)",
                    task.id,
                    "warning",
                )
            )
    return out


def task_lines(tf: taskfile.TaskFile) -> list[str]:
    from plan_build.dispatch import taskfile

    counts: dict[str, int] = {}
    for t in tf.tasks:
        counts[t.status or "unknown"] = counts.get(t.status or "unknown", 0) + 1
    order = [*taskfile.STATUSES, "unknown"]
    summary = ", ".join(f"{counts[s]} {s.lower()}" for s in order if s in counts)
    n = len(tf.tasks)
    lines = [
        f"{taskfile.FILENAME} · {n} task{'s' if n != 1 else ''}" + (f" · {summary}" if n else "")
    ]
    if tf.tasks:
        lines.append("")
    width = max((len(t.title) for t in tf.tasks), default=0)
    width = min(width, 48)
    for t in tf.tasks:
        deps = f"  after {', '.join(t.dependencies)}" if t.dependencies else ""
        title = t.title if len(t.title) <= 48 else t.title[:47] + "…"
        lines.append(f"  {t.id}  {(t.status or '?'):<11}  {title:<{width}}{deps}".rstrip())
    if tf.problems:
        lines.append("")
        lines.extend(p.human() for p in tf.problems)
    return lines


def stats_lines(s: dict[str, Any]) -> list[str]:
    if not s["dispatches"] and not s["attempts"]:
        return ["no dispatches recorded yet"]
    first = s["first_attempt_success"]
    rate = "n/a" if first["rate"] is None else f"{first['rate'] * 100:.0f}%"
    lines = [
        f"dispatches {s['dispatches']} · attempts {s['attempts']} · "
        f"first-attempt success {first['count']}/{first['of']} ({rate}) · "
        f"exhausted caps {s['exhausted_caps']}",
        "outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(s["outcomes"].items())),
        "reasons: " + ", ".join(f"{k} {v}" for k, v in sorted(s["reasons"].items())),
    ]
    for role, row in sorted(s["by_role"].items()):
        lines.append(
            f"  {role:<12} attempts {row['attempts']:<4} verified {row['verified']:<4} "
            f"mean codex time {row['mean_codex_seconds']}s"
        )
    tok = s["tokens"]
    reported = codexusage.from_json(tok["reported"])
    lines.append(
        f"tokens, as Codex reported them ({tok['attempts_with_usage']} attempts; "
        f"unknown for {tok['attempts_unknown']}): "
        + (codexusage.words(reported) if reported.known else "none reported")
    )
    for fp, rec in s["recipes"].items():
        lines.append(f"recipe {rec['id']} {fp}: {rec['dispatches']} dispatches")
    if s["unreadable_lines"]:
        lines.append(f"warning: {s['unreadable_lines']} unreadable telemetry lines skipped")
    return lines


@command(
    positional=["task_id"],
    help={
        "task_id": "the task to run, e.g. TASK-001 (none with --wave)",
        "accept_recipe": "pin the current Codex recipe for this repository if it differs",
        "dry_run": "print the codex argv and the rendered prompt (with --wave: the plan); "
        "change nothing",
        "json": "print the result as JSON on stdout",
        "wave": "run every ready task at once, each in its own worktree (or resume a stopped wave)",
        "jobs": "with --wave: at most this many tasks at once (1-4; default: the core count)",
    },
)
def dispatch(  # noqa: PLR0917 - invoke maps each flag to a parameter
    c: Context,
    task_id: str | None = None,
    accept_recipe: bool = False,
    dry_run: bool = False,
    json: bool = False,
    wave: bool = False,
    jobs: int = -1,  # -1: not given (a given 0 is refused as out of range)
) -> None:
    """Run one approved TASKS.md task through Codex: scoped, verified, corrected at most twice.

    With --wave, every ready task at once, each in its own worktree.
    """
    from plan_build.cli.strict import NO_VALUE
    from plan_build.core import errors

    session = Session.from_process()
    task_id = None if task_id == NO_VALUE else task_id
    if wave or jobs != -1:
        if not wave:
            raise errors.usage("--jobs works with --wave", "add --wave, or leave out --jobs")
        if task_id:
            raise errors.usage(
                f"--wave runs every ready task; it takes no task id (got {task_id})",
                f"leave out {task_id}, or leave out --wave to run that task alone",
            )
        from plan_build.dispatch import wave as waves

        def stopped(partial: Any) -> None:
            jsonout.write(session.stdout, partial.as_json())

        outcome = waves.run(
            session,
            jobs=None if jobs == -1 else jobs,
            dry_run=dry_run,
            accept_recipe=accept_recipe,
            on_interrupt=stopped if json else None,
        )
        if json:
            jsonout.write(session.stdout, outcome.as_json())
        if outcome.exit_code != ExitCode.OK:
            raise Exit(code=int(outcome.exit_code))
        return
    if not task_id:
        raise errors.usage(
            "dispatch needs a task id (or --wave)",
            "name the task, e.g. plan-build dispatch TASK-001, or run every ready task: "
            "plan-build dispatch --wave",
        )
    from plan_build.dispatch import runner as step

    def interrupted(partial: Any) -> None:
        jsonout.write(session.stdout, partial.as_json())

    result = step.run(
        session,
        task_id,
        accept_recipe=accept_recipe,
        dry_run=dry_run,
        on_interrupt=interrupted if json else None,
    )
    if json:
        jsonout.write(session.stdout, result.as_json())
    if result.exit_code != ExitCode.OK:
        raise Exit(code=int(result.exit_code))  # the step already said why, on stderr


TASKS: list[Any] = [tasks, dispatch]
