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
# Flags whose value is a path the run reads outside the sandbox, for the agent: it must lie in
# the work tree or Claude Code's plans (a plan read from a file the sandbox hides would hand
# the agent what the sandbox withholds).
PATH_FLAGS = {"review.plan": ("--plan", "-p")}
# Flags whose value is a path the run writes: refused outright (a report written into
# .git/hooks or ~/.bashrc; a check of the path would race a symbolic link swapped after it).
WRITE_FLAGS = {"report": ("--out", "-o")}
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
    """Where a run may start: the work tree (minus the git dir) or a wave's worktree; and
    where a path flag may point (the work tree, or Claude Code's plans for `--plan`)."""

    worktree: Path
    git_dir: Path
    waves: Path
    plans: tuple[Path, ...] = ()

    def allows(self, cwd: str) -> bool:
        if not os.path.isabs(cwd) or "\0" in cwd:
            return False
        real = Path(os.path.realpath(cwd))
        if within(real, self.waves):
            return True
        return self._in_work_tree(real)

    def _in_work_tree(self, real: Path) -> bool:
        return within(real, self.worktree) and not within(real, self.git_dir)

    def as_env(self) -> str:
        """The places as the value of PLAN_BUILD_BROKERED, so the run checks its own cwd."""
        import json

        return json.dumps(
            {"worktree": str(self.worktree), "git_dir": str(self.git_dir), "waves": str(self.waves)}
        )

    @classmethod
    def from_env(cls, value: str) -> Places | None:
        """The places a broker gave its run; None for any other value."""
        import json

        try:
            data = json.loads(value)
            return cls(Path(data["worktree"]), Path(data["git_dir"]), Path(data["waves"]))
        except (ValueError, TypeError, KeyError):
            return None

    def path_refusal(self, argv: Sequence[str], cwd: str) -> PlanBuildError | None:
        """Refuse `report --out` and a `review.plan --plan` that leads outside the work tree
        and Claude's plans (symbolic links resolved); None when the paths are fine."""
        name, rest = command_of(argv)
        for flag, _ in _flag_values(rest, WRITE_FLAGS.get(name or "", ())):
            return PlanBuildError(
                f"the session's broker does not run `plan-build {name} {flag}` for an agent: "
                "it would write outside the sandbox wherever the path points",
                f"run `plan-build {name}` without {flag} (it writes to its own place under the "
                "git dir and prints the path), then read or copy the file from there",
                code=ExitCode.USAGE,
            )
        for flag, value in _flag_values(rest, PATH_FLAGS.get(name or "", ())):
            given = os.path.expanduser(value)  # as review.plan reads it, with the launch's HOME
            real = Path(os.path.realpath(os.path.join(cwd, given)))
            if self._in_work_tree(real) or any(within(real, p) for p in self.plans):
                continue
            return PlanBuildError(
                f"the session's broker runs `plan-build {name} {flag}` only with a path in the "
                f"repository's work tree, not {value}",
                f"put the file in the work tree (outside .git) and pass that path to {flag}",
                code=ExitCode.USAGE,
            )
        return None


def confine_run(value: str, cwd: str) -> PlanBuildError | None:
    """A brokered run's own check of where it runs (`plan_build.main`, first thing): the
    broker checked the cwd it was asked for, but a folder can be swapped for a link between
    that check and the run's start; the process's cwd, once it runs, cannot."""
    places = Places.from_env(value)
    if places is None or places.allows(cwd):
        return None
    return outside(cwd)


def command_of(argv: Sequence[str]) -> tuple[str | None, list[str]]:
    """The command word (after the core flags) and its arguments; None: no command."""
    args = list(argv)
    i = 0
    while i < len(args) and args[i] in CORE_FLAGS:
        i += 1
    if i == len(args) or args[i].startswith("-"):
        return None, []
    return args[i], args[i + 1 :]


def _flag_values(rest: Sequence[str], flags: Sequence[str]) -> list[tuple[str, str]]:
    """Each value given to one of `flags`: `--out X`, `--out=X`, `-o X`, `-oX`."""
    found = []
    for i, arg in enumerate(rest):
        for flag in flags:
            if arg == flag:
                found.append((flag, rest[i + 1] if i + 1 < len(rest) else ""))
            elif arg.startswith(flag + "="):
                found.append((flag, arg[len(flag) + 1 :]))
            elif not flag.startswith("--") and arg.startswith(flag) and len(arg) > len(flag):
                found.append((flag, arg[len(flag) :].removeprefix("=")))
    return found


__all__ = [
    "ALLOWED",
    "PATH_FLAGS",
    "PERSON",
    "WRITE_FLAGS",
    "Places",
    "command_of",
    "confine_run",
    "judge",
    "outside",
    "within",
]
