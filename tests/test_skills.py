"""The two workflow skills Claude Code reads at the start of every session.

A user installs them as ~/.claude/skills/plan-build/SKILL.md and
~/.claude/skills/plan-build-architect/SKILL.md. What matters to that user: Claude Code accepts
the front matter, every plan-build command the skills tell Claude to run exists, the skills never
tell Claude to push or to run an agent headless, the memory recall gate and degraded mode are
spelled out, and the mechanical steps are delegated to plan-build instead of done by hand.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from plan_build.core import resources

SKILLS = Path(__file__).resolve().parent.parent / "skills"
STANDARD = SKILLS / "SKILL.md"
ARCHITECT = SKILLS / "ARCHITECT.md"
BOTH = pytest.mark.parametrize(
    ("path", "expected_name"),
    [(STANDARD, "plan-build"), (ARCHITECT, "plan-build-architect")],
    ids=["standard", "architect"],
)

# The public command line (docs/skills.md, DESIGN §3). A skill naming anything else sends
# Claude to a command that fails with a usage error.
PUBLIC_COMMANDS = frozenset(
    {
        "plan",
        "architect",
        "preflight",
        "identity",
        "enhance",
        "env",
        "status",
        "baseline",
        "review",
        "review.plan",
        "review.impl",
        "review.summary",
        "review.status",
        "review.doctor",
        "review.repeat",
        "review.approve",
        "review.done",
        "dispatch",
        "tasks",
        "verify",
        "commit",
        "release",
        "release.build",
        "release.activate",
        "release.list",
        "release.rollback",
        "release.gc",
        "release.install",
    }
)

# AgentMemory's MCP tool names (agentmemory 0.9.x registry). There is no memory_search and no
# memory_slot_set: a skill naming one would make Claude call a tool that does not exist.
MEMORY_TOOLS = frozenset(
    {
        "memory_recall",
        "memory_smart_search",
        "memory_file_history",
        "memory_timeline",
        "memory_patterns",
        "memory_profile",
        "memory_sessions",
        "memory_save",
        "memory_forget",
        "memory_governance_delete",
        "memory_lesson_save",
        "memory_lesson_recall",
        "memory_lesson_list",
        "memory_lesson_strengthen",
        "memory_slot_list",
        "memory_slot_get",
        "memory_slot_create",
        "memory_slot_append",
        "memory_slot_replace",
        "memory_slot_delete",
        "memory_consolidate",
        "memory_diagnose",
        "memory_reflect",
    }
)

# Skills shipped in the mattpocock-skills@mattpocock plugin (current names; to-prd, to-issues,
# decision-mapping and review were renamed).
MATT_SKILLS = frozenset(
    {
        "ask-matt",
        "grill-with-docs",
        "implement",
        "improve-codebase-architecture",
        "setup-matt-pocock-skills",
        "to-spec",
        "to-tickets",
        "triage",
        "wayfinder",
        "grill-me",
        "handoff",
        "teach",
        "writing-great-skills",
        "code-review",
        "codebase-design",
        "diagnosing-bugs",
        "domain-modeling",
        "prototype",
        "research",
        "resolving-merge-conflicts",
        "tdd",
        "grilling",
    }
)

FENCE = re.compile(r"^(`{3,})[^\n]*\n(.*?)^\1\s*$", re.MULTILINE | re.DOTALL)
INLINE = re.compile(r"`([^`\n]+)`")
COMMAND = re.compile(r"(?<![\w/-])plan-build\s+([^\s`\"']+)")


def split(path: Path) -> tuple[dict[str, Any], str]:
    import yaml

    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\n"), f"{path.name} must open with a front matter line '---'"
    front, sep, body = text[4:].partition("\n---\n")
    assert sep, f"{path.name}: front matter is not closed by a '---' line"
    data = yaml.safe_load(front)
    assert isinstance(data, dict), f"{path.name}: front matter is not a mapping"
    return data, body


def code_fragments(text: str) -> list[str]:
    """Everything a reader would copy and run: fenced blocks and inline code spans."""
    fragments = [m.group(2) for m in FENCE.finditer(text)]
    prose = FENCE.sub("", text)
    fragments += INLINE.findall(prose)
    return fragments


def commands_named(text: str) -> set[str]:
    found = set()
    for fragment in code_fragments(text):
        for word in COMMAND.findall(fragment):
            if not word.startswith("-"):
                found.add(word)
    return found


@BOTH
def test_skill_file_exists_and_has_content(path: Path, expected_name: str) -> None:
    assert path.is_file()
    _, body = split(path)
    assert len(body.strip().splitlines()) > 50


@BOTH
def test_front_matter_is_what_claude_code_accepts(path: Path, expected_name: str) -> None:
    data, _ = split(path)
    assert data["name"] == expected_name
    assert re.fullmatch(r"[a-z0-9-]{1,64}", data["name"])
    description = data["description"]
    assert isinstance(description, str)
    assert 0 < len(description) < 1024
    assert not re.search(r"<[^>]+>", description), "no XML tags in a skill description"


@BOTH
def test_skill_stays_short_enough_to_read_every_session(path: Path, expected_name: str) -> None:
    assert len(path.read_text(encoding="utf-8").splitlines()) <= 300


@BOTH
def test_no_unfinished_markers(path: Path, expected_name: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert not re.search(r"\b(TODO|TBD|FIXME|XXX)\b", text)


@BOTH
def test_every_plan_build_command_named_exists(path: Path, expected_name: str) -> None:
    named = commands_named(path.read_text(encoding="utf-8"))
    assert named, "the skill names no plan-build command at all"
    assert named <= PUBLIC_COMMANDS, f"unknown commands: {sorted(named - PUBLIC_COMMANDS)}"


def test_command_extraction_catches_an_invented_command() -> None:
    text = "Run `plan-build review.finish` then\n```\nplan-build push --now\n```\n"
    assert commands_named(text) == {"review.finish", "push"}
    assert commands_named("plan-build itself archives; `plan-build --help`") == set()


def test_standard_skill_delegates_review_verify_and_commit() -> None:
    named = commands_named(STANDARD.read_text(encoding="utf-8"))
    expected = {
        "review.plan",
        "review.impl",
        "review.repeat",
        "review.summary",
        "review.approve",
        "verify",
        "commit",
        "status",
    }
    assert expected <= named


def test_architect_skill_delegates_dispatch_tasks_review_verify_and_commit() -> None:
    named = commands_named(ARCHITECT.read_text(encoding="utf-8"))
    expected = {"dispatch", "tasks", "review.plan", "review.impl", "verify", "commit", "status"}
    assert expected <= named


@BOTH
def test_never_instructs_push_or_headless_agents(path: Path, expected_name: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert not re.search(r"git\s+push", text)
    assert not re.search(r"claude\s+(-p\b|--print\b)", text)
    # Codex and CodeRabbit runs belong to plan-build (review, dispatch), never to Claude.
    assert not re.search(r"codex\s+(exec|review)\b", text)
    assert not re.search(r"coderabbit\s+review\b", text)
    # Neither skill stages or commits with git by hand.
    assert not re.search(r"git\s+(add|commit)\b", text)


@BOTH
def test_recall_gate_and_degraded_mode_are_spelled_out(path: Path, expected_name: str) -> None:
    text = path.read_text(encoding="utf-8")
    lowered = " ".join(text.lower().split())
    assert "recall gate" in lowered
    assert "PLAN_BUILD_MEMORY_MODE" in text
    assert "`required`" in text
    assert "`degraded`" in text
    assert "continuity is unavailable" in lowered
    assert "never claim" in lowered
    assert "AGENTMEMORY_PROJECT_NAME" in text


@BOTH
def test_checkpoint_slot_uses_the_real_slot_tools(path: Path, expected_name: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert "`workflow_status`" in text
    for tool in ("memory_slot_get", "memory_slot_create", "memory_slot_replace"):
        assert f"`{tool}`" in text
    assert "Next step:" in text


@BOTH
def test_only_real_memory_tools_are_named(path: Path, expected_name: str) -> None:
    named = set(re.findall(r"\bmemory_[a-z][a-z_]*\b", path.read_text(encoding="utf-8")))
    assert named
    assert named <= MEMORY_TOOLS, f"unknown tools: {sorted(named - MEMORY_TOOLS)}"


def test_standard_skill_routes_through_current_matt_skills() -> None:
    text = STANDARD.read_text(encoding="utf-8")
    invoked = set(re.findall(r"mattpocock-skills:([a-z-]+)", text))
    assert invoked <= MATT_SKILLS, f"unknown Matt skills: {sorted(invoked - MATT_SKILLS)}"
    for name in ("grill-with-docs", "to-spec", "to-tickets", "implement", "wayfinder"):
        assert name in invoked
    for name in ("tdd", "code-review", "diagnosing-bugs"):
        assert f"`{name}`" in text
    for old in ("to-prd", "to-issues", "decision-mapping"):
        assert old not in text


def test_architect_skill_keeps_claude_to_documents() -> None:
    text = ARCHITECT.read_text(encoding="utf-8")
    for record in ("SPEC.md", "TASKS.md", "ADR.md", "CHANGELOG.md", "README.md"):
        assert f"`{record}`" in text
    for doc in ("USER_MANUAL", "RUNBOOK", "API", "DEPLOYMENT", "SECURITY", "HANDOVER"):
        assert f"`docs/{doc}.md`" in text


def test_architect_skill_describes_the_task_fields_the_dispatcher_reads() -> None:
    text = " ".join(ARCHITECT.read_text(encoding="utf-8").split())
    assert "TASK-NNN" in text
    for status in ("Pending", "In Progress", "Blocked", "Review", "Complete"):
        assert f"`{status}`" in text
    for field in (
        "dependencies",
        "objective",
        "allowed file scope",
        "context",
        "Codex prompt",
        "acceptance criteria",
        "test requirements",
        "verification commands",
        "CodeRabbit outcome",
        "completion evidence",
    ):
        assert f"**{field}**" in text


def test_architect_skill_takes_the_start_mode_from_the_launch_prompt() -> None:
    text = " ".join(ARCHITECT.read_text(encoding="utf-8").split())
    assert "`resume`" in text
    assert "`archive-and-start-new`" in text
    assert "`docs/archive/" in text
    assert "at most two corrections" in text


@pytest.mark.parametrize(
    ("mode", "name"), [("standard", "SKILL.md"), ("architect", "ARCHITECT.md")]
)
def test_checkout_resolves_each_mode_to_its_skill(mode: str, name: str) -> None:
    found = resources.locate({}).skill(mode)
    assert found.name == name
    assert found.is_file()
    assert found.stat().st_size > 0
