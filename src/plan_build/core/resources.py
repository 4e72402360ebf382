"""Where skills and templates come from: the bound release, the installed wheel or the checkout.

A run resolves this once at start so a release activated meanwhile never mixes generations
within one run: `PLAN_BUILD_RELEASE` (set for child processes) names the release; otherwise a
run whose code comes from a release's zipapp binds to that same release.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from plan_build.core import sessionvars

PACKAGE_DIR = Path(__file__).resolve().parent.parent  # plan_build/, above core/
CHECKOUT_ROOT = PACKAGE_DIR.parent.parent


@dataclass(frozen=True)
class Resources:
    origin: str  # "release", "wheel" or "checkout"
    skills: Path
    templates: Path
    release_id: str | None = None
    release_path: Path | None = None

    def skill(self, mode: str) -> Path:
        return self.skills / ("ARCHITECT.md" if mode == "architect" else "SKILL.md")


def locate(env: Mapping[str, str] | None = None) -> Resources:
    env = os.environ if env is None else env
    pinned = env.get(sessionvars.RELEASE)
    if pinned:
        return _release(Path(os.path.realpath(pinned)))
    from plan_build.core.runrelease import running_bundle

    bundle = running_bundle(PACKAGE_DIR)
    if bundle is not None:
        return _release(bundle)
    data = PACKAGE_DIR / "_data"
    if (data / "templates").is_dir():
        return Resources("wheel", data / "skills", data / "templates")
    return Resources("checkout", CHECKOUT_ROOT / "skills", CHECKOUT_ROOT / "templates")


def _release(path: Path) -> Resources:
    from plan_build.core.runrelease import release_id_of

    return Resources("release", path, path / "templates", release_id_of(path), path)
