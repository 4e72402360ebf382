"""`release.install`: Claude Code skills that point through `current`, and a `plan-build`
launcher that runs the current release. Idempotent; never replaces a file it did not write
unless told to (`--force`, which keeps the old file as `<name>.plan-build-backup`)."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from plan_build.core import errors, sessionvars
from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.core.fsutil import atomic_write, fsync_dir
from plan_build.release import PYZ, SKILL_DIRS, check_root

MARKER = "# managed-by: plan-build release.install"
BACKUP_SUFFIX = ".plan-build-backup"

# The launcher resolves `current` exactly once, under the bind lock, then runs that release's
# zipapp in this same process; the release's own code takes the lease before the lock is let go.
LAUNCHER = """\
#!{python} -sE
{marker}
# Runs the active plan-build release. `plan-build release.install` rewrites this file.
import fcntl
import os
import sys

ROOT = {root!r}


def _stop(what, fix):
    sys.stderr.write("plan-build: " + what + "\\n  fix: " + fix + "\\n")
    raise SystemExit(3)


_lock = None
try:
    _lock = os.open(os.path.join(ROOT, ".bind.lock"), os.O_RDONLY)
    fcntl.flock(_lock, fcntl.LOCK_SH)
except OSError:
    _lock = None
_pinned = os.environ.get("{release_var}")
_release = os.path.realpath(_pinned or os.path.join(ROOT, "current"))
_pyz = os.path.join(_release, {pyz!r})
if not os.path.isfile(_pyz):
    if _pinned:
        _stop("{release_var}=" + _pinned + " is not a plan-build release",
              "unset {release_var}, or point it at a directory under " + ROOT + "/releases")
    _stop("no active plan-build release in " + ROOT,
          "activate one: plan-build release.activate SOURCE "
          "(in a checkout: inv release.build --activate)")
sys.argv[0] = _pyz
sys.path.insert(0, _pyz)
from plan_build.main import run_release  # noqa: E402

run_release(_pyz, _lock)
"""


@dataclass
class Installed:
    links: dict[Path, Path]  # skill link → target
    launcher: Path
    changed: list[str] = field(default_factory=list)
    backups: list[Path] = field(default_factory=list)
    on_path: bool = True

    def as_json(self) -> dict[str, object]:
        return {
            "skills": {str(k): str(v) for k, v in self.links.items()},
            "launcher": str(self.launcher),
            "changed": self.changed,
            "backups": [str(p) for p in self.backups],
            "on_path": self.on_path,
        }


def launcher_text(root: Path, python: str) -> str:
    return LAUNCHER.format(
        python=python, marker=MARKER, root=str(root), pyz=PYZ, release_var=sessionvars.RELEASE
    )


def _is_ours_launcher(path: Path) -> bool:
    if path.is_symlink() or not path.is_file():
        return False
    try:
        with path.open("r", encoding="utf-8", errors="replace") as fh:
            head = [fh.readline() for _ in range(3)]
    except OSError:
        return False
    return any(line.rstrip("\n") == MARKER for line in head)


def _describe(path: Path) -> str:
    if path.is_symlink():
        return f"a link to {os.readlink(path)}"
    if path.is_dir():
        return "a directory"
    return "a file plan-build did not write"


def install(
    root: Path,
    home: Path,
    bin_dir: Path,
    *,
    force: bool,
    path_env: str,
    python: str = sys.executable,
) -> Installed:
    """Install (or confirm) the skill links and the launcher; change nothing on refusal."""
    check_root(root)
    if not (root / "current").is_symlink():
        raise PlanBuildError(
            f"no active release in {root}",
            "activate one first: plan-build release.activate SOURCE",
            code=ExitCode.PREFLIGHT,
        )
    links = {
        home / ".claude" / "skills" / skill_dir / "SKILL.md": root / "current" / name
        for name, skill_dir in SKILL_DIRS.items()
    }
    launcher = bin_dir / "plan-build"
    wanted = launcher_text(root, python)

    foreign = [
        link
        for link, target in links.items()
        if (link.exists() or link.is_symlink())
        and not (link.is_symlink() and os.readlink(link) == str(target))
    ]
    if (launcher.exists() or launcher.is_symlink()) and not _is_ours_launcher(launcher):
        foreign.append(launcher)
    if foreign and not force:
        listing = "; ".join(f"{p} ({_describe(p)})" for p in foreign)
        raise errors.usage(
            f"will not replace what plan-build did not install: {listing}",
            "move them away, or rerun with --force (old files are kept as *"
            f"{BACKUP_SUFFIX}); for the launcher you can also choose --bin-dir DIR",
        )

    result = Installed(links=links, launcher=launcher)
    try:
        for link, target in links.items():
            if link in foreign:
                result.backups.append(_back_up(link))
            if not (link.is_symlink() and os.readlink(link) == str(target)):
                _symlink(link, target)
                result.changed.append(f"skill {link} -> {target}")
        if launcher in foreign:
            result.backups.append(_back_up(launcher))
        current = launcher.read_text(encoding="utf-8") if _is_ours_launcher(launcher) else None
        if current != wanted:
            atomic_write(launcher, wanted, mode=0o755)
            result.changed.append(f"launcher {launcher}")
    except OSError as exc:
        raise PlanBuildError(
            f"cannot install: {exc.strerror or exc} ({exc.filename or ''})",
            "check the permissions of ~/.claude/skills and the launcher directory",
            code=ExitCode.PREFLIGHT,
        ) from None
    entries = [os.path.realpath(p) for p in path_env.split(os.pathsep) if p]
    result.on_path = os.path.realpath(bin_dir) in entries
    return result


def _symlink(link: Path, target: Path) -> None:
    """Create or replace `link` atomically (temporary link + rename in the same directory)."""
    link.parent.mkdir(parents=True, exist_ok=True)
    tmp = link.with_name(f".{link.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    os.symlink(target, tmp)
    os.replace(tmp, link)
    fsync_dir(link.parent)


def _back_up(path: Path) -> Path:
    backup = path.with_name(path.name + BACKUP_SUFFIX)
    n = 1
    while backup.exists() or backup.is_symlink():
        n += 1
        backup = path.with_name(f"{path.name}{BACKUP_SUFFIX}.{n}")
    os.rename(path, backup)
    return backup
