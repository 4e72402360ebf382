"""Launch prompts against golden files (UPDATE_GOLDEN=1 rewrites them after a deliberate
change; review the diff like code)."""

from __future__ import annotations

import os
from pathlib import Path

import jinja2
import pytest

from plan_build.core.render import fence, render
from tests.support.paths import ROOT

GOLDEN = Path(__file__).parent / "golden"
TEMPLATES = ROOT / "templates"
PAYLOAD = "--looks like a flag\nKeep {{ jinja }} and {% raw %} literal.\n```py\nx = 1\n```\n"

BASE = {
    "repo_root": "/home/ana/src/shop",
    "skill_path": "/opt/plan-build/releases/3f9c/SKILL.md",
    "project_id": "github.com/ana/shop",
    "memory_mode": "required",
    "payload": PAYLOAD,
    "original": None,
    "session_id": "20261130T021250Z-4f1c",
    "release_id": "3f9c",
}
CASES = {
    "standard.md": ("launch/standard.md.j2", {}),
    "standard-degraded-enhanced.md": (
        "launch/standard.md.j2",
        {
            "memory_mode": "degraded",
            "original": "make audit log faster\n",
            "session_id": None,
            "release_id": None,
        },
    ),
    "architect-resume.md": (
        "launch/architect.md.j2",
        {
            "skill_path": "/opt/plan-build/releases/3f9c/ARCHITECT.md",
            "start_mode": "resume",
            "archived": [],
            "archive_dir": "",
        },
    ),
    "architect-new.md": (
        "launch/architect.md.j2",
        {
            "skill_path": "/opt/plan-build/releases/3f9c/ARCHITECT.md",
            "start_mode": "archive-and-start-new",
            "archived": ["SPEC.md", "TASKS.md"],
            "archive_dir": "docs/archive/20261130T021250Z",
        },
    ),
}


@pytest.mark.parametrize("golden", sorted(CASES))
def test_launch_prompt_matches_golden_file(golden: str) -> None:
    template, extra = CASES[golden]
    text = render(TEMPLATES, template, {**BASE, **extra})
    path = GOLDEN / golden
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


def test_payload_is_verbatim_inside_a_longer_fence() -> None:
    text = render(TEMPLATES, "launch/standard.md.j2", BASE)
    assert "````text\n" + PAYLOAD + "````" in text


def test_an_undefined_name_is_an_error_not_an_empty_string() -> None:
    context = dict(BASE)
    del context["project_id"]
    with pytest.raises(jinja2.UndefinedError):
        render(TEMPLATES, "launch/standard.md.j2", context)


@pytest.mark.parametrize(("text", "ticks"), [("plain", 3), ("a ``` b", 4), ("````` x", 6)])
def test_fence_is_longer_than_any_backtick_run(text: str, ticks: int) -> None:
    fenced = fence(text)
    assert fenced.startswith("`" * ticks + "text\n")
    assert fenced.endswith("\n" + "`" * ticks)
