"""What the session broker runs for an agent, and where (docs/adr/0191).

An agent may run the plan-build commands that record no person's decision: review rounds and
their read-only views, verify, status, tasks, dispatch, report, env, preflight, identity
(without --set), checkpoints, help and version. Everything that records a person's decision
(commit, review.approve, review.done, identity --set, setup, release.*, plan, architect,
baseline, restore...) is refused with the command the user runs instead, in their own
terminal; anything unknown is refused too. Runs start only in the repository's work tree
(outside its git dir) or in one of plan-build's wave worktrees. Stdlib and core only.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from plan_build.core.errors import ExitCode, PlanBuildError

# What an agent may run: commands that record no person's decision.
ALLOWED = frozenset(
    {
        "review",
        "review.review",
        "review.plan",
        "review.impl",
        "review.repeat",
        "review.status",
        "review.summary",
        "review.doctor",
        "verify",
        "status",
        "tasks",
        "dispatch",
        "report",
        "env",
        "preflight",
        "identity",
        "checkpoints",
    }
)
# Commands that are a person's decision: refused with the command the user runs instead.
PERSON = {
    "commit": "making the session's commit",
    "review.approve": "approving a review round",
    "review.done": "marking a review workflow done without approval",
    "plan": "starting a session",
    "architect": "starting a session",
    "setup": "changing this machine's setup",
    "enhance": "approving an enhanced request",
    "baseline": "taking a new session baseline",
    "restore": "restoring a checkpoint over the work tree",
}
CORE_FLAGS = frozenset({"-d", "--debug", "-V", "--version", "-h", "--help", "-l", "--list"})
HELP_FLAGS = frozenset({"-h", "--help", "-V", "--version", "-l", "--list"})
TERMINAL = "in their own terminal, outside Claude Code"


def judge(argv: Sequence[str]) -> PlanBuildError | None:
    """None when an agent may run `plan-build <argv>` through the broker, else the refusal."""
    args = list(argv)
    i = 0
    helping = False
    while i < len(args) and args[i].startswith("-"):
        if args[i] not in CORE_FLAGS:
            return _unknown(f"the option {args[i]!r} before the command")
        helping = helping or args[i] in HELP_FLAGS
        i += 1
    if i == len(args) or helping:
        return None  # help, version, the command list: read-only
    name, rest = args[i], args[i + 1 :]
    if name == "restore":
        return PlanBuildError(
            "`plan-build restore` rewrites the work tree from a checkpoint; the session's "
            "broker does not run it for an agent (only `checkpoints`, which lists them)",
            f"ask the user to run `plan-build restore ...` {TERMINAL}",
            code=ExitCode.APPROVAL,
        )
    if name in PERSON or name.startswith("release"):
        what = PERSON.get(name, "changing plan-build's installed releases")
        return PlanBuildError(
            f"{what} is the user's decision: the session's agent cannot run `plan-build {name}`",
            f"ask the user to run `plan-build {shlex.join([name, *rest])}` {TERMINAL}",
            code=ExitCode.APPROVAL,
        )
    if name == "identity" and any(a == "-s" or a.startswith(("--set", "-s")) for a in rest):
        return PlanBuildError(
            "writing the project's identity is the user's decision: the session's agent cannot "
            "run `plan-build identity --set`",
            f"ask the user to run `plan-build {shlex.join([name, *rest])}` {TERMINAL}",
            code=ExitCode.APPROVAL,
        )
    if name not in ALLOWED:
        return _unknown(f"the command {name!r}")
    return None


def _unknown(what: str) -> PlanBuildError:
    allowed = ", ".join(sorted(a for a in ALLOWED if a != "review.review"))
    return PlanBuildError(
        f"the session's broker does not run {what}: inside a session an agent may run only "
        f"plan-build's {allowed}",
        "run one of those; anything else is the user's, in their own terminal",
        code=ExitCode.USAGE,
    )


def outside(cwd: str) -> PlanBuildError:
    return PlanBuildError(
        f"the session's broker runs plan-build only in the repository's work tree or a wave's "
        f"worktree, not in {cwd}",
        "cd into the repository, then run the command again",
        code=ExitCode.USAGE,
    )


def within(path: Path, top: Path) -> bool:
    return path == top or top in path.parents


@dataclass(frozen=True)
class Places:
    """Where a run may start: the work tree (minus the git dir) or a wave's worktree."""

    worktree: Path
    git_dir: Path
    waves: Path

    def allows(self, cwd: str) -> bool:
        if not os.path.isabs(cwd) or "\0" in cwd:
            return False
        real = Path(os.path.realpath(cwd))
        if within(real, self.waves):
            return True
        return within(real, self.worktree) and not within(real, self.git_dir)


__all__ = ["ALLOWED", "PERSON", "Places", "judge", "outside", "within"]
