"""Golden files for the Codex prompts (templates/codex/*.md.j2).

A template change shows up as a diff against tests/golden/codex/. After reviewing it,
regenerate with: UPDATE_GOLDEN=1 pytest tests/test_codex_templates.py
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from plan_build.core.render import render
from tests.support.paths import ROOT

TEMPLATES = ROOT / "templates"
GOLDEN = Path(__file__).parent / "golden" / "codex"


def base(**over: Any) -> dict[str, Any]:
    ctx: dict[str, Any] = {
        "project": {"id": "github.com/ana/shop", "source": ".agentmemory-project", "missing": None},
        "memory_mode": "required",
        "slot": {
            "state": "present",
            "content": "Phase: execution\nNext step: TASK-002",
            "reason": None,
        },
        "tasks_ref": "TASKS.md",
        "spec_ref": "SPEC.md",
        "task": {
            "id": "TASK-002",
            "title": "Paginate the audit log",
            "objective": "Show audit entries 50 at a time.",
            "context": 'See SPEC.md, section "Audit log".',
            "prompt": "Add pagination to the audit log view.\n\n```python\npage = 1\n```",
            "acceptance": "- page 2 shows entries 51-100",
            "tests": "A unit test for page boundaries.",
        },
        "commands": ["python -m pytest -q tests/test_page.py", "ruff check src"],
        "scope": ["src/app.py", "tests/**"],
        "scope_marker": "SCOPE EXPANSION NEEDED:",
        "checkpoint": {
            "complete": "TASK-001 Add the audit log model",
            "in_flight": "",
            "blocked": "",
            "next": "TASK-003 Export the audit log",
        },
        "previous": {"count": 0, "last_outcome": None},
    }
    ctx.update(over)
    return ctx


CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "task-required.md": ("codex/task.md.j2", base()),
    "task-degraded.md": (
        "codex/task.md.j2",
        base(
            memory_mode="degraded",
            slot={"state": "skipped", "content": None, "reason": None},
            project={"id": None, "source": None, "missing": ".agentmemory-project is missing"},
            spec_ref=None,
            previous={"count": 2, "last_outcome": "Blocked"},
            task={**base()["task"], "context": ""},
        ),
    ),
    "task-slot-foreign.md": (
        "codex/task.md.j2",
        base(slot={"state": "foreign", "content": None, "reason": "github.com/bob/other"}),
    ),
    "task-slot-unavailable.md": (
        "codex/task.md.j2",
        base(
            slot={
                "state": "unavailable",
                "content": None,
                "reason": "HTTP 503: slots are not enabled",
            }
        ),
    ),
    "correction.md": (
        "codex/correction.md.j2",
        base(
            slot={"state": "absent", "content": None, "reason": None},
            correction=1,
            max_corrections=2,
            changed=["src/app.py", "tests/test_page.py"],
            failures=[
                {
                    "command": "python -m pytest -q tests/test_page.py",
                    "exit": 1,
                    "timed_out": False,
                    "timeout": 900,
                    "output": "FAILED tests/test_page.py::test_two - assert 0 == 51\n1 failed",
                },
                {
                    "command": "ruff check src",
                    "exit": None,
                    "timed_out": True,
                    "timeout": 900,
                    "output": "",
                },
            ],
        ),
    ),
}


@pytest.mark.parametrize("golden", sorted(CASES))
def test_codex_prompt_matches_its_golden_file(golden: str) -> None:
    template, context = CASES[golden]
    text = render(TEMPLATES, template, context)
    path = GOLDEN / golden
    if os.environ.get("UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert text == path.read_text()


def test_every_prompt_carries_the_prohibitions_and_the_scope() -> None:
    for template, context in CASES.values():
        text = render(TEMPLATES, template, context)
        assert "No git commit, stage (git add), push, reset, restore" in text
        assert "No edits, new files or deletions outside the allowed scope." in text
        assert "- `src/app.py`\n- `tests/**`\n" in text
        assert "\n\n\n" not in text


def test_degraded_mode_never_claims_a_recall() -> None:
    template, context = CASES["task-degraded.md"]
    text = render(TEMPLATES, template, context)
    assert "continuity is unavailable" in text
    assert "recall" not in text.replace("nothing was recalled", "")


def test_a_missing_variable_is_an_error_not_an_empty_string() -> None:
    import jinja2

    context = base()
    del context["scope"]
    with pytest.raises(jinja2.UndefinedError):
        render(TEMPLATES, "codex/task.md.j2", context)
