"""Facts about the git repository plan-build acts on, read through `proc`."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from plan_build.core import proc
from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.core.fsutil import NameRules

GIT_TIMEOUT = 30.0
# Before every subcommand: optional locks off, and no "refresh the index while you are at it"
# (`git diff` rewrites the index's stat data even with GIT_OPTIONAL_LOCKS=0). The user's index
# is read, never written, except by commit's own update of the committed paths.
READ_ONLY_INDEX = ("--no-optional-locks", "-c", "diff.autoRefreshIndex=false")


def git_argv(args: Sequence[str]) -> list[str]:
    """The argv of one of plan-build's git calls (every call goes through here)."""
    return ["git", *READ_ONLY_INDEX, *args]


def git_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for plan-build's own git calls: no optional locks, no pager, C locale."""
    env = dict(os.environ if base is None else base)
    env["GIT_OPTIONAL_LOCKS"] = "0"
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["LC_ALL"] = "C"
    return env


def git(
    args: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    check: bool = True,
    input: str | None = None,
    timeout: float = GIT_TIMEOUT,
) -> proc.Completed:
    return proc.run(
        git_argv(args), cwd=cwd, env=git_env(env), check=check, input=input, timeout=timeout
    )


@dataclass(frozen=True)
class Repo:
    """A non-bare git work tree (possibly a linked worktree)."""

    root: Path
    git_dir: Path
    common_dir: Path
    # the session's environment it was discovered with: every git call here runs in it
    env: Mapping[str, str] | None = field(default=None, compare=False, repr=False)

    def git(
        self,
        *args: str,
        check: bool = True,
        env: Mapping[str, str] | None = None,
        input: str | None = None,
        timeout: float = GIT_TIMEOUT,
        overlay: Mapping[str, str] | None = None,
    ) -> proc.Completed:
        """One git call in the repository; `overlay` adds variables to its environment."""
        base = env if env is not None else self.env
        if overlay:
            base = {**(base if base is not None else git_env()), **overlay}
        return git(list(args), cwd=self.root, env=base, check=check, input=input, timeout=timeout)

    @property
    def state_dir(self) -> Path:
        """plan-build's metadata, shared by all worktrees and surviving worktree removal."""
        return self.common_dir / "plan-build"

    @cached_property
    def names(self) -> NameRules:
        """How this repository's file system compares names (core.ignorecase and
        core.precomposeunicode, which git sets at init by probing it); asked once."""
        out = self.git(
            "config", "-z", "--get-regexp", r"^core\.(ignorecase|precomposeunicode)$", check=False
        ).stdout
        found: dict[str, bool] = {}
        for record in out.split("\0"):
            key, _, value = record.partition("\n")
            if key:
                found[key.lower()] = value.strip().lower() in ("", "true", "yes", "on", "1")
        return NameRules(
            ignorecase=found.get("core.ignorecase", False),
            precompose=found.get("core.precomposeunicode", False),
        )

    def inside(self, path: Path) -> Path:
        """`path` in the work tree, refused when a symlink on the way leads out of it or into
        .git (fsutil.confine), in the file system's own way of comparing names."""
        from plan_build.core.fsutil import confine

        return confine(path, self.root, forbid=self.common_dir, names=self.names)

    def in_state(self, path: Path) -> Path:
        """`path` under the git directory, refused when a symlink on the way leads out of it."""
        from plan_build.core.fsutil import confine

        return confine(path, self.common_dir)

    def head(self) -> str | None:
        r = self.git("rev-parse", "--verify", "--quiet", "HEAD^{commit}", check=False)
        return r.stdout.strip() or None

    def branch(self) -> str | None:
        r = self.git("symbolic-ref", "--short", "-q", "HEAD", check=False)
        return r.stdout.strip() or None

    def unmerged_paths(self) -> list[str]:
        # ls-files reads the index alone (`git diff` would refresh it: a write)
        r = self.git("ls-files", "--unmerged", "-z", check=False)
        return sorted({rec.split("\t", 1)[1] for rec in r.stdout.split("\0") if "\t" in rec})

    def origin_url(self) -> str | None:
        r = self.git("config", "--get", "remote.origin.url", check=False)
        return r.stdout.strip() or None


def not_a_repo(cwd: Path, why: str) -> PlanBuildError:
    return PlanBuildError(
        f"{cwd} {why}",
        "cd into a git work tree (or run: git init)",
        code=ExitCode.PREFLIGHT,
    )


def discover(cwd: Path, env: Mapping[str, str] | None = None) -> Repo:
    """The work tree containing `cwd`, or a PlanBuildError saying why there is none."""
    # one git call: outside a work tree git prints the first three answers, then fails
    probe = ["rev-parse", "--is-bare-repository", "--is-inside-git-dir", "--is-inside-work-tree"]
    where = ["--show-toplevel", "--absolute-git-dir", "--git-common-dir"]
    r = git([*probe, *where], cwd=cwd, env=env, check=False)
    lines = r.stdout.splitlines()
    if len(lines) < 3:
        raise not_a_repo(cwd, "is not inside a git repository")
    bare, in_git_dir, in_tree = lines[:3]
    if bare == "true":
        raise PlanBuildError(
            f"{cwd} is a bare repository (it has no work tree)",
            "run plan-build from a clone or a worktree (git worktree add ../work <branch>)",
            code=ExitCode.PREFLIGHT,
        )
    if in_git_dir == "true" or in_tree != "true":
        raise PlanBuildError(
            f"{cwd} is inside the .git directory, not the work tree",
            'cd to the repository\'s top level (cd "$(git rev-parse --show-toplevel)")',
            code=ExitCode.PREFLIGHT,
        )
    if r.returncode != 0 or len(lines) < 6:
        raise not_a_repo(cwd, "is not inside a usable git work tree")
    root, git_dir, common = Path(lines[3]), Path(lines[4]), Path(lines[5])
    if not common.is_absolute():
        common = (cwd / common).resolve()
    return Repo(
        root=root, git_dir=git_dir, common_dir=common, env=dict(env) if env is not None else None
    )
