"""The Codex review prompts, rendered from templates/codex/*.j2, compared with golden files
(regenerate after an intended change: UPDATE_GOLDEN=1 pytest tests/test_review_prompts.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from plan_build.core.resources import CHECKOUT_ROOT
from plan_build.review.prompts import PriorFinding, PromptContext, build, project_id

GOLDEN = Path(__file__).parent / "golden" / "codex"
TEMPLATES = CHECKOUT_ROOT / "templates"
PLAN = "# Paginate the audit log\n\n1. Add `limit`.\n\n```sql\nSELECT 1;\n```\n"


def plan_round_1() -> PromptContext:
    return PromptContext(
        project_id="github.com/ana/shop",
        workflow="20261130-101500-a1b2c3",
        phase="plan",
        round=1,
        task="Paginate the audit log",
        plan=PLAN,
    )


def impl_round_2() -> PromptContext:
    return PromptContext(
        project_id=None,
        workflow="20261130-101500-a1b2c3",
        phase="implement",
        round=2,
        task="Paginate the audit log",
        plan=PLAN,
        focus="Only the cursor handling changed.",
        prior_round=1,
        prior=[
            PriorFinding("HIGH-1", "HIGH", "codex", "audit.py:40 cursor not validated.", "FIX"),
            PriorFinding("LOW-1", "LOW", "coderabbit", "`audit.py:9` Prefer f-strings.", "WONTFIX"),
        ],
        head="0123456789abcdef0123456789abcdef01234567",
        tree="89abcdef0123456789abcdef0123456789abcdef",
        changed=["audit.py", "tests/test_audit.py"],
    )


CASES = {
    "review-plan.md": (plan_round_1, False),
    "review-impl.md": (impl_round_2, False),
    "review-impl-strict.md": (impl_round_2, True),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_prompt_matches_its_golden_file(name: str) -> None:
    make, strict = CASES[name]
    text = build(TEMPLATES, make(), strict=strict)
    golden = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        golden.write_text(text)
    assert text == golden.read_text()


def test_the_plan_is_fenced_longer_than_any_fence_inside_it() -> None:
    text = build(TEMPLATES, plan_round_1())
    assert "````markdown\n" + PLAN + "````\n" in text


def test_prompts_forbid_edits_and_speculative_memories() -> None:
    for ctx in (plan_round_1(), impl_round_2()):
        text = build(TEMPLATES, ctx)
        assert "read-only" in text
        assert "do not save" in text
        assert "[CRITICAL-1]" in text
        assert "Critical: N" in text


def test_project_id_comes_from_the_committed_identity_file(tmp_path: Path) -> None:
    assert project_id(tmp_path) is None
    (tmp_path / ".agentmemory-project").write_text("\ngithub.com/ana/shop\n")
    assert project_id(tmp_path) == "github.com/ana/shop"
