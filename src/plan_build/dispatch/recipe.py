"""The one fixed Codex recipe: model and reasoning effort per role, limits and timeouts.

There are no profiles, config keys, environment overrides or flags that change it: a
different recipe is a code change with a new id and fingerprint (docs/adr/0061). The
fingerprint is the sha256 of the recipe's canonical JSON (sorted keys, no whitespace), so
anyone can recompute it from `plan-build env --json`. `FINGERPRINT` pins it: if the recipe
in code and the pinned value disagree, dispatch refuses to run (the recipe drifted without
being renamed). Each repository also pins the recipe its first dispatch used; dispatch
refuses a different one until the user accepts it (`--accept-recipe`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.core.fsutil import StateFileError, atomic_write, read_json

IMPLEMENTER, CORRECTOR, REVIEWER = "implementer", "corrector", "reviewer"


@dataclass(frozen=True)
class Role:
    model: str
    reasoning: str
    sandbox: str

    def as_json(self) -> dict[str, str]:
        return {"model": self.model, "reasoning": self.reasoning, "sandbox": self.sandbox}


@dataclass(frozen=True)
class Limits:
    max_corrections: int
    codex_timeout_seconds: int
    verification_timeout_seconds: int

    def as_json(self) -> dict[str, Any]:
        return {
            "max_corrections": self.max_corrections,
            "codex_timeout_seconds": self.codex_timeout_seconds,
            "verification_timeout_seconds": self.verification_timeout_seconds,
        }


@dataclass(frozen=True)
class Recipe:
    id: str
    roles: Mapping[str, Role]
    limits: Limits

    def canonical(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "roles": {name: role.as_json() for name, role in self.roles.items()},
            "limits": self.limits.as_json(),
        }

    @property
    def fingerprint(self) -> str:
        text = json.dumps(self.canonical(), sort_keys=True, separators=(",", ":"))
        return "sha256:" + hashlib.sha256(text.encode("ascii")).hexdigest()

    def describe(self) -> dict[str, Any]:
        """What `env --json` reports under `recipe`: id, fingerprint, roles, limits."""
        return {"fingerprint": self.fingerprint, **self.canonical()}

    def role(self, name: str) -> Role:
        return self.roles[name]

    def codex_flags(self, name: str) -> list[str]:
        """The `codex exec` options that apply this role (sandbox, model, reasoning effort)."""
        role = self.roles[name]
        return [
            "--sandbox",
            role.sandbox,
            "-m",
            role.model,
            "-c",
            f'model_reasoning_effort="{role.reasoning}"',
        ]


RECIPE = Recipe(
    id="codex-v1",
    roles={
        IMPLEMENTER: Role(model="gpt-5.5", reasoning="high", sandbox="workspace-write"),
        CORRECTOR: Role(model="gpt-5.5", reasoning="medium", sandbox="workspace-write"),
        REVIEWER: Role(model="gpt-5.5", reasoning="high", sandbox="read-only"),
    },
    limits=Limits(
        max_corrections=2,
        codex_timeout_seconds=1800,
        verification_timeout_seconds=900,
    ),
)

# Recomputed by tests/test_recipe.py; change it only together with RECIPE.id.
FINGERPRINT = "sha256:f10e0aca2f6630ae5e57e02ceadbad29b6d59bfec88ce1939fbc828f75afc1b8"


def describe() -> dict[str, Any]:
    return RECIPE.describe()


def current() -> Recipe:
    """The recipe in code, refusing one whose content no longer matches its pinned fingerprint."""
    if RECIPE.fingerprint != FINGERPRINT:
        raise PlanBuildError(
            f"the Codex recipe {RECIPE.id} in this build has fingerprint {RECIPE.fingerprint}, "
            f"not the {FINGERPRINT} it is reported with",
            "this build of plan-build is inconsistent: reinstall it or activate a released "
            "build (plan-build release.rollback)",
            code=ExitCode.INTERNAL,
        )
    return RECIPE


def changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """Human lines naming every leaf that differs between two described recipes."""

    def flat(node: Any, prefix: str = "") -> dict[str, Any]:
        if isinstance(node, Mapping):
            out: dict[str, Any] = {}
            for key, value in node.items():
                out.update(flat(value, f"{prefix}.{key}" if prefix else str(key)))
            return out
        return {prefix: node}

    a, b = flat(old), flat(new)
    lines = []
    for key in sorted(set(a) | set(b)):
        if key == "fingerprint" or a.get(key) == b.get(key):
            continue
        before = json.dumps(a[key]) if key in a else "(absent)"
        after = json.dumps(b[key]) if key in b else "(absent)"
        lines.append(f"{key}: {before} → {after}")
    return lines


def pin_path(state_dir: Path) -> Path:
    return state_dir / "dispatch" / "recipe.json"


def check_pinned(state_dir: Path, recipe: Recipe, *, accept: bool, task_id: str) -> str:
    """Compare `recipe` with the one this repository pinned; pin it when none is.

    Returns "pinned" (first use), "same" or "accepted". A different recipe without `accept`
    raises a preflight error naming every change.
    """
    path = pin_path(state_dir)
    described = recipe.describe()
    payload = json.dumps(described, indent=2, sort_keys=True) + "\n"
    try:
        pinned = read_json(path)
        if not isinstance(pinned, dict):
            raise ValueError("not an object")
    except FileNotFoundError:
        atomic_write(path, payload)
        return "pinned"
    except StateFileError as exc:
        if accept:
            atomic_write(path, payload)
            return "accepted"
        raise PlanBuildError(
            f"the pinned Codex recipe {path} is unreadable ({exc.why})",
            f"rerun with --accept-recipe to pin {recipe.id} ({recipe.fingerprint})",
            code=ExitCode.PREFLIGHT,
        ) from exc
    except (OSError, ValueError) as exc:
        if accept:
            atomic_write(path, payload)
            return "accepted"
        raise PlanBuildError(
            f"the pinned Codex recipe {path} is unreadable ({exc})",
            f"rerun with --accept-recipe to pin {recipe.id} ({recipe.fingerprint})",
            code=ExitCode.PREFLIGHT,
        ) from exc
    if pinned.get("fingerprint") == recipe.fingerprint:
        return "same"
    if accept:
        atomic_write(path, payload)
        return "accepted"
    what = changes(pinned, described) or ["fingerprint differs"]
    before = f"{pinned.get('id')} {pinned.get('fingerprint')}"
    raise PlanBuildError(
        f"the Codex recipe differs from the one pinned for this repository "
        f"({before} → {recipe.id} {recipe.fingerprint}):\n    " + "\n    ".join(what),
        f"if the new recipe is intended, rerun: plan-build dispatch {task_id} --accept-recipe "
        "(telemetry keeps both fingerprints apart); otherwise return to the release that "
        "pinned it",
        code=ExitCode.PREFLIGHT,
    )
