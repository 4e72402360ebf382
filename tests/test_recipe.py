"""The fixed Codex recipe: what `env --json` reports and what dispatch pins per repository."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.dispatch import recipe as recipes


def test_the_reported_fingerprint_is_the_sha256_of_the_canonical_json() -> None:
    described = recipes.describe()
    assert set(described) == {"id", "fingerprint", "roles", "limits"}
    body = {k: v for k, v in described.items() if k != "fingerprint"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"))
    expected = "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()
    assert described["fingerprint"] == expected
    # the pinned constant matches the code: change both (and the id) together
    assert expected == recipes.FINGERPRINT
    assert recipes.current() is recipes.RECIPE


def test_the_recipe_names_every_role_and_the_limits() -> None:
    described = recipes.describe()
    assert set(described["roles"]) == {"implementer", "corrector", "reviewer"}
    for role in described["roles"].values():
        assert set(role) == {"model", "reasoning", "sandbox"}
    assert described["roles"]["implementer"]["sandbox"] == "workspace-write"
    assert described["roles"]["reviewer"]["sandbox"] == "read-only"
    assert described["limits"]["max_corrections"] == 2
    assert described["limits"]["codex_timeout_seconds"] > 0
    assert described["limits"]["verification_timeout_seconds"] > 0


def test_the_description_is_deterministic() -> None:
    assert json.dumps(recipes.describe(), sort_keys=True) == json.dumps(
        recipes.describe(), sort_keys=True
    )


def test_codex_flags_apply_the_role() -> None:
    assert recipes.RECIPE.codex_flags("corrector") == [
        "--sandbox",
        "workspace-write",
        "-m",
        recipes.RECIPE.roles["corrector"].model,
        "-c",
        f'model_reasoning_effort="{recipes.RECIPE.roles["corrector"].reasoning}"',
    ]


def test_a_recipe_that_drifted_from_its_fingerprint_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(recipes, "FINGERPRINT", "sha256:" + "0" * 64)
    with pytest.raises(PlanBuildError) as err:
        recipes.current()
    assert err.value.code == ExitCode.INTERNAL
    assert "not the sha256:000" in err.value.what


def test_first_use_pins_then_the_same_recipe_passes(tmp_path: Path) -> None:
    assert recipes.check_pinned(tmp_path, recipes.RECIPE, accept=False, task_id="TASK-001") == (
        "pinned"
    )
    pinned = json.loads(recipes.pin_path(tmp_path).read_text())
    assert pinned == recipes.describe()
    assert recipes.check_pinned(tmp_path, recipes.RECIPE, accept=False, task_id="TASK-001") == (
        "same"
    )


def test_a_changed_recipe_names_every_change_until_accepted(tmp_path: Path) -> None:
    recipes.check_pinned(tmp_path, recipes.RECIPE, accept=False, task_id="TASK-001")
    other = recipes.Recipe(
        id="codex-v2",
        roles={
            **recipes.RECIPE.roles,
            "corrector": recipes.Role("gpt-6", "high", "workspace-write"),
        },
        limits=recipes.Limits(
            max_corrections=1, codex_timeout_seconds=1800, verification_timeout_seconds=900
        ),
    )
    with pytest.raises(PlanBuildError) as err:
        recipes.check_pinned(tmp_path, other, accept=False, task_id="TASK-004")
    text = str(err.value)
    assert err.value.code == ExitCode.PREFLIGHT
    assert 'id: "codex-v1" → "codex-v2"' in text
    assert 'roles.corrector.model: "gpt-5.5" → "gpt-6"' in text
    assert 'roles.corrector.reasoning: "medium" → "high"' in text
    assert "limits.max_corrections: 2 → 1" in text
    assert "fix: if the new recipe is intended, rerun: plan-build dispatch TASK-004 " in text
    assert recipes.check_pinned(tmp_path, other, accept=True, task_id="TASK-004") == "accepted"
    assert json.loads(recipes.pin_path(tmp_path).read_text())["id"] == "codex-v2"


def test_an_unreadable_pin_is_an_error_until_accepted(tmp_path: Path) -> None:
    path = recipes.pin_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    with pytest.raises(PlanBuildError) as err:
        recipes.check_pinned(tmp_path, recipes.RECIPE, accept=False, task_id="TASK-001")
    assert "is unreadable" in str(err.value)
    assert recipes.check_pinned(tmp_path, recipes.RECIPE, accept=True, task_id="TASK-001") == (
        "accepted"
    )


def test_env_json_reports_the_recipe_dispatch_uses(repo: Path, cli) -> None:
    r = cli("env", "--json", cwd=repo)
    assert r.code == 0, r.stderr
    reported = json.loads(r.stdout)["recipe"]
    assert reported == recipes.describe()
    assert reported["fingerprint"] == recipes.RECIPE.fingerprint
