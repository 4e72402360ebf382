"""Protected twins: a round's approval counts only when plan-build's state under the git dir
holds its twin (docs/adr/0192).

A round's approval file (`<phase>-approval-r<N>.json`) lives in the workflow folder, in the
work tree, where an agent's Write and Edit tools reach; codex-review's layout puts it there.
So `review.approve` first writes its twin under the git common dir's plan-build folder:

    <state>/approvals/<workflow id>/<phase>-r<N>.json
        {"format": 1, "workflow", "phase", "round", "approval_sha256", "round_sha256"}

`approval_sha256` is the approval file's exact bytes, `round_sha256` the round record's (what
was reviewed) when there is one. Claude Code's sandbox keeps the git dir read-only for every
process Claude's tools start, so an agent can neither write a twin nor make one match a file
it forged; a run of the session's broker (outside the sandbox, on an agent's behalf) is
refused before it writes (PLAN_BUILD_BROKERED). Everything that takes an approval as granted
(`approval.current_approval` → commit and status; `review.status`) checks the twin first.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from plan_build.core import brokerclient, fsutil
from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.core.gitrepo import Repo
from plan_build.core.interact import OUTSIDE
from plan_build.review.layout import WorkflowDir

FORMAT = 1


def path(repo: Repo, workflow: str, phase: str, round: int) -> Path:
    return repo.state_dir / "approvals" / workflow / f"{phase}-r{round}.json"


def _sha256(path: Path | bytes) -> str | None:
    import hashlib  # loads OpenSSL: only an approval and its checks hash (review.status is light)

    try:
        data = path if isinstance(path, bytes) else path.read_bytes()
    except FileNotFoundError:
        return None
    return hashlib.sha256(data).hexdigest()


def refuse_brokered(env: Mapping[str, str], what: str, command: str) -> None:
    """A run of the session's broker acts for an agent: it never approves (exit 4)."""
    if env.get(brokerclient.BROKERED):
        raise PlanBuildError(
            f"{what} is the user's decision, and this runs for the session's agent (through "
            "the session's broker)",
            f"ask the user to run `{command}` {OUTSIDE}",
            code=ExitCode.APPROVAL,
        )


def write(
    repo: Repo,
    wdir: WorkflowDir,
    phase: str,
    round: int,
    *,
    approval: bytes,
    env: Mapping[str, str],
) -> None:
    """Write the twin of the approval file whose bytes will be `approval` (before that file:
    a process that cannot write the twin writes no approval at all)."""
    refuse_brokered(env, "approving a review round", "plan-build review.approve")
    twin = path(repo, wdir.id, phase, round)
    try:
        fsutil.write_json(
            repo.in_state(twin),
            {
                "format": FORMAT,
                "workflow": wdir.id,
                "phase": phase,
                "round": round,
                "approval_sha256": _sha256(approval),
                "round_sha256": _sha256(wdir.record(phase, round)),
            },
            sort_keys=True,
            mode=0o644,
        )
    except OSError as exc:
        raise PlanBuildError(
            f"cannot record the approval in plan-build's protected state ({twin}: "
            f"{exc.strerror or exc}); nothing was approved",
            "approve in your own terminal, outside Claude Code (inside a session the git dir "
            "is read-only): plan-build review.approve",
            code=ExitCode.APPROVAL,
        ) from exc


def check(repo: Repo, wdir: WorkflowDir, phase: str, round: int) -> str | None:
    """None when the approval file of `phase` round `round` has its matching twin, else why
    it does not count (one line, naming what to do)."""
    label = f"{'plan' if phase == 'plan' else 'implementation'} round {round}"
    refusal = (
        f"{label}'s approval in workflow {wdir.id} was not made by `plan-build review.approve` "
        "at the user's terminal ({why}); review the change again (plan-build review.plan) and "
        "approve it with plan-build review.approve in your own terminal"
    )
    try:
        data = fsutil.read_json(repo.in_state(path(repo, wdir.id, phase, round)))
    except FileNotFoundError:
        return refusal.format(why="plan-build's protected record of it is missing")
    except (OSError, fsutil.StateFileError, PlanBuildError):
        return refusal.format(why="plan-build's protected record of it is unreadable")
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return refusal.format(why="plan-build's protected record of it is unreadable")
    if data.get("approval_sha256") != _sha256(wdir.approval(phase, round)):
        return refusal.format(why="the approval file differs from what review.approve wrote")
    if data.get("round_sha256") != _sha256(wdir.record(phase, round)):
        return refusal.format(why="the round's record changed after it was approved")
    return None


__all__ = ["check", "path", "refuse_brokered", "write"]
