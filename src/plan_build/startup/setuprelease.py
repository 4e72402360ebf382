"""The `setup` step that leaves Claude's skills folder and the launcher pointing at a release.

With a release active, the step is `release.install` (skill links through `current`, the
launcher in ~/.local/bin). With none, a fresh machine would end without the skills in the
folder a directly started `claude` reads, so the one step first makes this plan-build the
active release (`release.actions.activate_running`: the same staging, validation and atomic
switch as `release.activate`) and then installs it. A second setup finds nothing to do.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from plan_build.startup.setupstep import Planner, Result, Step

REMEDY = "move the files it names away, or run plan-build release.install --force"


def skill_steps(p: Planner) -> None:
    from plan_build.release import SKILL_DIRS, root_dir
    from plan_build.release import install as installer

    root = root_dir(p.env)
    home = p.session.home
    current = root / "current"
    links = {
        home / ".claude" / "skills" / d / "SKILL.md": current / n for n, d in SKILL_DIRS.items()
    }
    launcher = home / ".local" / "bin" / "plan-build"
    changes = (*(p.short(link) for link in links), p.short(launcher))

    def install() -> Result:
        done = installer.install(
            root, home, launcher.parent, force=False, path_env=p.env.get("PATH", "")
        )
        note = "" if done.on_path else f"; add {p.short(launcher.parent)} to PATH"
        return Result(True, f"{len(done.changed)} installed{note}", tuple(done.changed))

    def problem() -> str | None:
        if not current.is_symlink():
            return f"no release is active in {p.short(root)}"
        if not all(link.is_symlink() for link in links):
            return "the skill links are still missing"
        return None

    if current.exists() and not current.is_symlink():  # a copied install: activate refuses it
        p.manual(
            "release",
            f"{p.short(current)} is not a symbolic link (a copied install?)",
            f"mv {current} {current}.old, then rerun plan-build setup",
        )
        return
    if not current.is_symlink():
        p.add(release_step(p, root, install=install, changes=changes, verify=problem))
        return
    missing = [
        link
        for link, target in links.items()
        if not (link.is_symlink() and os.readlink(link) == str(target))
    ]
    if not missing and installer._is_ours_launcher(launcher):
        return
    p.add(
        Step(
            id="skills",
            check="skill.readable",
            title="link the Claude Code skills to the active release and install the launcher",
            command="plan-build release.install",
            changes=changes,
            remedy=REMEDY,
            action=install,
            verify=problem,
        )
    )


def release_step(
    p: Planner,
    root: Path,
    *,
    install: Callable[[], Result],
    changes: tuple[str, ...],
    verify: Callable[[], str | None],
) -> Step:
    from plan_build import __version__
    from plan_build.release import actions

    kind, where = actions.running_source()
    if kind == "release":
        what = f"activate the release this plan-build runs from ({where.name})"
        shown = f"plan-build release.activate {where} && plan-build release.install"
    elif kind == "checkout":
        what = f"build a release of plan-build {__version__} from its checkout and activate it"
        shown = (
            f"plan-build release.build --checkout {p.short(where)} --activate "
            "&& plan-build release.install"
        )
    else:
        what = f"build a release from the installed plan-build {__version__} and activate it"
        shown = (
            f"build a release from {p.short(where)} and activate it (in-process), "
            "then plan-build release.install"
        )

    def run() -> Result:
        act = actions.activate_running(root, p.session.console)
        done = install()
        return Result(
            True, f"activated release {act.id} (plan-build {act.version}); {done.detail}", done.tail
        )

    return Step(
        id="release",
        check="release",
        title=f"{what}, then link its skills into Claude's skills folder and install the launcher",
        command=shown,
        changes=(f"{p.short(root)}/ (the release and its current link)", *changes),
        remedy=REMEDY,
        action=run,
        verify=verify,
    )
