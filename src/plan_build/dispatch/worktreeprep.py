"""A wave's worktree made able to run the project's checks (docs/adr/0196).

A fresh worktree holds what git tracks and the user's untracked files, not what git ignores
(`.venv/`, `node_modules/`, `.env`) nor submodules' contents. Four conventions fill it, in this
order, before Codex runs:

- `.worktreeinclude` (committed, gitignore-style patterns, as Claude Code, the Codex app,
  Conductor and ccmanager read it): a path is copied when it matches **and** git ignores it;
  tracked files never. Copies are `cp -a --reflink=auto` (a clone where the file system can).
- `worktree.symlinkDirectories` from the user's and the project's Claude settings
  (`~/.claude/settings.json`, `.claude/settings.json`): those folders are linked to the user's,
  not copied. A task writing into one writes into the user's tree, so the scope check walks
  the user's folder after each Codex run (`linked_changes`).
- Submodules populated in the user's tree are cloned (objects shared, `--shared`) at the
  commit the user's tree has checked out.
- `worktree.setup` in `.plan-build.yaml`: one command run in the new worktree, bounded by
  `worktree.timeout`, with PLAN_BUILD_ROOT, PLAN_BUILD_WORKTREE, PLAN_BUILD_TASK and
  PLAN_BUILD_PORT (a free port per task) in its environment, its output kept in a file. It
  runs through `core.checkrun.run_check`, like every project program plan-build starts.

`gaps` names the paths a task's verification uses that the worktree will lack, for the plan
and for naming such a failure as the environment's, not the task's.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import socket
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from plan_build.core import checkrun, ctimescan, proc, sandbox
from plan_build.core.config import Config
from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.core.gitrepo import Repo, discover
from plan_build.core.snapshot import Ignored
from plan_build.dispatch.attempt import check_refs
from plan_build.dispatch.inflight import InFlight
from plan_build.dispatch.results import Attempt
from plan_build.dispatch.scope import Byproducts, Scope
from plan_build.dispatch.taskmodel import Task

INCLUDE_FILE = ".worktreeinclude"
CLAUDE_SETTINGS = Path(".claude") / "settings.json"
SETUP_TIMEOUT = 600.0


@dataclass(frozen=True)
class Prep:
    """What the project and the user configure for new worktrees."""

    links: tuple[str, ...] = ()  # worktree.symlinkDirectories (user's and project's)
    setup: tuple[str, ...] = ()  # worktree.setup argv
    timeout: float = SETUP_TIMEOUT
    include: bool = False  # the project has a .worktreeinclude


@dataclass
class Readiness:
    """What was done to one new worktree."""

    copied: list[str] = field(default_factory=list)
    linked: list[str] = field(default_factory=list)
    submodules: list[str] = field(default_factory=list)
    setup: checkrun.CheckRun | None = None
    log: Path | None = None
    port: int = 0

    def words(self) -> str:
        parts = []
        if self.copied:
            parts.append(f"copied {', '.join(self.copied[:6])}")
        if self.linked:
            parts.append(f"linked {', '.join(self.linked)}")
        if self.submodules:
            parts.append(f"submodules {', '.join(self.submodules)}")
        if self.setup is not None:
            parts.append(f"setup {'passed' if self.setup.ok else 'failed'}")
        return "; ".join(parts)


def _safe_relative(name: str) -> str | None:
    p = name.strip().strip("/")
    if not p or p.startswith("/") or any(s in ("..", "") for s in p.split("/")):
        return None
    return p


def _claude_links(path: Path) -> list[str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    wt = data.get("worktree") if isinstance(data, dict) else None
    names = wt.get("symlinkDirectories") if isinstance(wt, dict) else None
    if not isinstance(names, list):
        return []
    return [n for n in (_safe_relative(x) for x in names if isinstance(x, str)) if n]


def configured(user: Repo, cfg: Config, home: Path | None) -> Prep:
    """The project's `.worktreeinclude`, the Claude settings' symlinkDirectories (the user's,
    then the project's) and `.plan-build.yaml`'s `worktree` section."""
    links: list[str] = []
    sources = [home / CLAUDE_SETTINGS] if home is not None else []
    for path in [*sources, user.root / CLAUDE_SETTINGS]:
        links.extend(n for n in _claude_links(path) if n not in links)
    setup = tuple(str(x) for x in cfg.get("worktree.setup", []) or [])
    timeout = float(cfg.get("worktree.timeout", SETUP_TIMEOUT) or SETUP_TIMEOUT)
    return Prep(tuple(links), setup, timeout, (user.root / INCLUDE_FILE).is_file())


def _ignored(user: Repo, paths: Sequence[str]) -> set[str]:
    """Those of `paths` git ignores in the user's tree (tracked files never are)."""
    if not paths:
        return set()
    done = user.git("check-ignore", "-z", "--stdin", input="\0".join(paths) + "\0", check=False)
    return {p for p in done.stdout.split("\0") if p}


def included(user: Repo) -> list[str]:
    """The ignored paths `.worktreeinclude` names (a wholly matched folder as one entry)."""
    if not (user.root / INCLUDE_FILE).is_file():
        return []
    out = user.git(
        "ls-files", "-z", "--others", "--ignored", "--directory", "--exclude-from", INCLUDE_FILE
    ).stdout
    listed = [p for p in out.split("\0") if p]
    ignored = _ignored(user, listed)
    return [p.rstrip("/") for p in listed if p in ignored]


def _tracked(user: Repo, name: str) -> bool:
    return bool(user.git("ls-files", "-z", "--", name, check=False).stdout.strip("\0"))


def _copy_argv(src: Path, dst: Path) -> list[str]:
    if sys.platform.startswith("linux"):  # GNU cp: a clone where the file system can
        return ["cp", "-a", "--reflink=auto", str(src), str(dst)]
    return ["cp", "-pR", str(src), str(dst)]


def _copy(user: Repo, wt: Repo, rel: str) -> None:
    src, dst = user.root / rel, wt.root / rel
    dst.parent.mkdir(parents=True, exist_ok=True)
    done = proc.run(_copy_argv(src, dst), cwd=user.root, env=user.env, timeout=3_600)
    if not done.ok:
        raise PlanBuildError(
            f"cannot copy {rel} into the wave's worktree: {done.stderr.strip()[:300]}",
            f"check {INCLUDE_FILE} and the free disk space, then run the wave again",
            code=ExitCode.BLOCKED,
        )


def _submodules(user: Repo, wt: Repo) -> list[str]:
    """Clone each submodule populated in the user's tree into the worktree, at the commit the
    user's tree has checked out (objects shared with the user's clone of it)."""
    out = user.git("ls-files", "-z", "--stage", check=False).stdout
    made: list[str] = []
    for rec in out.split("\0"):
        meta, _, path = rec.partition("\t")
        if not meta.startswith("160000 ") or not (user.root / path / ".git").exists():
            continue
        sub = discover(user.root / path, user.env)
        head = sub.head()
        target = wt.root / path
        if head is None or any(target.iterdir() if target.is_dir() else []):
            continue
        with contextlib.suppress(OSError):
            target.rmdir()
        sub.git("clone", "-q", "--shared", "--no-checkout", str(sub.root), str(target))
        cloned = discover(target, user.env)
        cloned.git("checkout", "-q", "--detach", head)
        made.append(path)
    return made


def prepare(user: Repo, wt: Repo, prep: Prep) -> Readiness:
    """Copy, link and clone into the new worktree `wt` (before its start tree is taken)."""
    ready = Readiness()
    for name in prep.links:
        src, dst = user.root / name, wt.root / name
        if not src.is_dir() or os.path.lexists(dst) or _tracked(user, name):
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.symlink_to(src.resolve(), target_is_directory=True)
        ready.linked.append(name)
    for rel in included(user):
        if any(rel == n or rel.startswith(n + "/") for n in ready.linked):
            continue
        if os.path.lexists(wt.root / rel):
            continue
        _copy(user, wt, rel)
        ready.copied.append(rel)
    ready.submodules = _submodules(user, wt)
    return ready


def free_port(taken: set[int]) -> int:
    """A TCP port free on the loopback now, not one already handed to this wave."""
    for _ in range(20):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port not in taken:
            taken.add(port)
            return port
    return 0


def task_env(
    env: Mapping[str, str], user: Repo, wt: Repo, task_id: str, port: int
) -> dict[str, str]:
    """The task's environment (its setup, Codex and its verification): where it runs."""
    return {
        **env,
        "PLAN_BUILD_ROOT": str(user.root),
        "PLAN_BUILD_WORKTREE": str(wt.root),
        "PLAN_BUILD_TASK": task_id,
        "PLAN_BUILD_PORT": str(port),
    }


def run_setup(
    prep: Prep,
    wt: Repo,
    env: Mapping[str, str],
    log: Path,
    *,
    cancel: threading.Event | None = None,
    on_start: Callable[[int], None] | None = None,
) -> checkrun.CheckRun | None:
    """The project's setup command in the worktree, under the session's sandbox policy for
    that worktree (it writes only the worktree and its temp; a linked folder stays the user's);
    its output goes to `log`."""
    if not prep.setup:
        return None
    done = checkrun.run_check(
        prep.setup,
        cwd=wt.root,
        env=env,
        timeout=prep.timeout,
        supervised=True,
        on_start=on_start,
        cancel=cancel,
        policy=sandbox.for_checks(wt.root, env),
    )
    log.parent.mkdir(parents=True, exist_ok=True)
    text = f"$ {proc.quote(prep.setup)}\n{done.stdout}{done.stderr}"
    if done.timed_out:
        text += f"\n(stopped after {prep.timeout:g}s: worktree.timeout)\n"
    elif done.error:
        text += f"\n{done.error}\n"
    else:
        text += f"\n(exit {done.returncode})\n"
    log.write_text(text, encoding="utf-8")
    return done


def setup_why(done: checkrun.CheckRun, prep: Prep) -> str:
    if done.timed_out:
        return f"the worktree setup command did not finish within {prep.timeout:g}s"
    if done.error:
        return f"the worktree setup command could not run: {done.error}"
    if done.denied:
        return f"the worktree setup command exited {done.returncode}: {done.denied}"
    return f"the worktree setup command exited {done.returncode}"


def _words(task: Task) -> list[str]:
    out: list[str] = []
    for c in task.commands:
        try:
            words = list(c.argv) or shlex.split(c.text)
        except ValueError:
            continue
        for word in words:
            w = word.split("=", 1)[1] if word.startswith("-") and "=" in word else word
            if w.startswith(("-", "/")) or "://" in w:
                continue
            w = w.removeprefix("./").rstrip("/")
            if ("/" in w or w.startswith(".")) and _safe_relative(w) and w not in out:
                out.append(w)
    return out


def gaps(user: Repo, task: Task, prep: Prep, copied: Sequence[str] | None = None) -> list[str]:
    """Paths the task's verification names that exist in the user's tree only because git
    ignores them, and that nothing configured brings into a worktree. A setup command may make
    anything, so with one configured there are none."""
    if prep.setup:
        return []
    words = [w for w in _words(task) if os.path.lexists(user.root / w)]
    if not words:
        return []
    brought = [*prep.links, *(included(user) if copied is None else copied)]
    ignored = _ignored(user, words)
    return [
        w
        for w in words
        if w in ignored and not any(w == b or w.startswith(b + "/") for b in brought)
    ]


def gap_words(found: Sequence[str]) -> str:
    shown = ", ".join(f"`{p}`" for p in found[:4])
    return (
        f"its verification uses {shown}, which git ignores in your work tree, so a wave's "
        f"worktree lacks it (name it in {INCLUDE_FILE}, in worktree.symlinkDirectories of "
        ".claude/settings.json, or make it with worktree.setup in .plan-build.yaml)"
    )


def linked_changes(
    root: Path, linked: Sequence[str], since_ns: int, env: Mapping[str, str] | None
) -> list[str]:
    """What changed inside the user's linked folders since `since_ns`: a task writing through
    its worktree's link writes there. A folder is named only when nothing below it is."""
    if not linked:
        return []
    found = ctimescan.changed_since(root, list(linked), since_ns, env)
    files = {p for kind, p in found if kind != "d"}
    parents = {q.rsplit("/", i)[0] for q in files for i in range(1, q.count("/") + 1)}
    dirs = {p for kind, p in found if kind == "d" and p not in parents}
    return sorted(files | dirs)


def check_linked(
    a: Attempt,
    *,
    root: Path,
    linked: Sequence[str],
    since_ns: int,
    env: Mapping[str, str] | None,
    scope: Scope,
    byproducts: Byproducts,
) -> None:
    """Add to attempt `a` what it wrote through its worktree's links into the user's folders
    (`root`): changed, ignored by git, and outside the scope unless the scope allows it."""
    found = linked_changes(root, linked, since_ns, env)
    for p in found:
        if p in a.changed or p in a.byproducts:
            continue
        if byproducts.matches(p):
            a.byproducts.append(p)
            continue
        a.changed.append(p)
        a.ignored.append(p)
        if not scope.allows(p):
            a.outside.append(p)
    if found:
        a.notes.append(
            "written through the worktree's link into your work tree: "
            + ", ".join(f"`{p}`" for p in found[:10])
        )


def check_wave_attempt(
    d: InFlight, a: Attempt, scope: Scope, linked: Sequence[str], ignored: Ignored | None
) -> None:
    """A wave task's checks after a Codex run beyond a dispatch's own: the user's refs (every
    worktree shares them) and the folders linked to the user's."""
    if d.refs_before is not None and d.plan_repo is not None:
        check_refs(d.plan_repo, d.refs_before, a)
        d.refs_before = None
    if linked and ignored is not None:
        check_linked(
            a,
            root=d.plan_home.root,
            linked=linked,
            since_ns=ignored.taken_ns,
            env=d.env,
            scope=scope,
            byproducts=d.byproducts,
        )


def environment_note(root: Path, found: Sequence[str]) -> str | None:
    """The evidence note for a verification that needed paths the worktree at `root` still
    lacks; None when it has them all (then the failure may well be the task's)."""
    missing = [g for g in found if not os.path.lexists(root / g)]
    if not missing:
        return None
    shown = ", ".join(f"`{g}`" for g in missing[:4])
    return (
        f"the verification uses {shown}, which this worktree lacks (git ignores it in your "
        "work tree): the environment failed, not necessarily the task; its result stays in "
        "the worktree"
    )


__all__ = [
    "INCLUDE_FILE",
    "Prep",
    "Readiness",
    "check_linked",
    "check_wave_attempt",
    "configured",
    "environment_note",
    "free_port",
    "gap_words",
    "gaps",
    "included",
    "linked_changes",
    "prepare",
    "run_setup",
    "setup_why",
    "task_env",
]
