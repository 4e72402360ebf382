"""Immutable releases: build a bundle, validate it, stage and activate it atomically, bind each
run to the release it started from, roll back, collect old releases, install skills and launcher.

On-disk layout under the releases root (see docs/release.md):

    <root>/.lock                 writers (activate, rollback, gc) take it exclusively
    <root>/.bind.lock            a run takes it shared while it resolves `current` and leases
    <root>/current -> releases/<id>
    <root>/releases/<id>/        plan-build.pyz, SKILL.md, ARCHITECT.md, templates/, MANIFEST.sha256
    <root>/releases/.stage-*     staging of an activation in progress (or killed)
    <root>/leases/<pid>-*.lease  one per running invocation, flock-held while it runs
    <root>/activations.log       one JSON line per switch of `current`
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path

from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.core.runrelease import ID_LENGTH as ID_LENGTH
from plan_build.core.runrelease import ID_RE as ID_RE
from plan_build.core.runrelease import MANIFEST as MANIFEST
from plan_build.core.runrelease import is_release_id as is_release_id

PYZ = "plan-build.pyz"
SKILL = "SKILL.md"
ARCHITECT = "ARCHITECT.md"
TEMPLATES = "templates"
REQUIRED = (PYZ, SKILL, ARCHITECT, MANIFEST)
# The installed Claude skill directory for each skill file of a release.
SKILL_DIRS = {SKILL: "plan-build", ARCHITECT: "plan-build-architect"}


def root_dir(env: Mapping[str, str] | None = None) -> Path:
    """`$PLAN_BUILD_HOME`, else `$XDG_DATA_HOME/plan-build`, else ~/.local/share/plan-build."""
    env = os.environ if env is None else env
    explicit = env.get("PLAN_BUILD_HOME")
    if explicit:
        return Path(os.path.abspath(os.path.expanduser(explicit)))
    data = env.get("XDG_DATA_HOME")
    if data and os.path.isabs(data):
        return Path(data) / "plan-build"
    home = env.get("HOME") or str(Path.home())
    return Path(home) / ".local" / "share" / "plan-build"


def invalid(what: str, fix: str | None = None) -> PlanBuildError:
    """A bundle or release that must not become visible (exit 6, like a failed verification)."""
    return PlanBuildError(what, fix, code=ExitCode.BLOCKED)


def unavailable(what: str, fix: str | None = None) -> PlanBuildError:
    """The releases root or the build environment cannot be used as it is (exit 3)."""
    return PlanBuildError(what, fix, code=ExitCode.PREFLIGHT)


def check_root(root: Path) -> None:
    """The releases root is a directory, or does not exist yet (the writers create it): a
    file there (or in its path) is refused before anything reads or writes under it."""
    for path in (root, *root.parents):
        if path.is_dir():
            return
        if path.exists() or path.is_symlink():
            what = "a file" if path.exists() else "a broken symbolic link"
            where = f"the releases root {root}"
            problem = f"is {what}" if path == root else f"cannot be made: {path} is {what}"
            raise unavailable(
                f"{where} {problem}, not a directory",
                f"set PLAN_BUILD_HOME to a directory (or unset it), or move {path} away",
            )


# Called at every named step of staging, activation and collection. Empty in normal runs;
# the kill-injection tests add a hook that SIGKILLs the process exactly at one step.
checkpoint_hooks: list[Callable[[str], None]] = []


def checkpoint(step: str) -> None:
    for hook in checkpoint_hooks:
        hook(step)
