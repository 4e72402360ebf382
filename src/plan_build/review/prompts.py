"""The prompts Codex reviews from: `templates/codex/review-plan.md.j2` and
`review-impl.md.j2`, rendered strictly (an unknown name is an error)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from plan_build.core.render import render

TEMPLATES = {"plan": "codex/review-plan.md.j2", "implement": "codex/review-impl.md.j2"}
IDENTITY_FILE = ".agentmemory-project"


@dataclass(frozen=True)
class PriorFinding:
    id: str
    severity: str
    reviewer: str
    finding: str
    decision: str


@dataclass
class PromptContext:
    project_id: str | None
    workflow: str
    phase: str
    round: int
    task: str
    plan: str
    focus: str | None = None
    prior_round: int | None = None
    prior: list[PriorFinding] = field(default_factory=list)
    head: str | None = None
    tree: str | None = None
    changed: list[str] = field(default_factory=list)

    def as_dict(self, strict: bool) -> dict[str, Any]:
        data = asdict(self)
        data["prior"] = self.prior  # keep attribute access in the template
        data["strict"] = strict
        return data


def project_id(repo_root: Path) -> str | None:
    """The committed AgentMemory project id, when the repository has one."""
    try:
        text = (repo_root / IDENTITY_FILE).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return None


def build(templates: Path, ctx: PromptContext, *, strict: bool = False) -> str:
    return render(templates, TEMPLATES[ctx.phase], ctx.as_dict(strict))


__all__ = ["TEMPLATES", "PriorFinding", "PromptContext", "build", "project_id"]
