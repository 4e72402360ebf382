"""The step of a workflow's current round, derived from its files (never stored).

completed/cancelled from the status; otherwise `working` until the round's review exists and
is a review, `review` until every finding in it has a decision in the findings file, then
`approval`. A review file that is not a review (no tags and no "No findings." summary with all
four counts - what codex-review leaves after a garbage answer) is `working`: never approvable,
and the next `plan-build review` reviews the round again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from plan_build.review.findings import (
    CODERABBIT_MARKER,
    Decision,
    Finding,
    decided,
    decisions,
    extract,
    invalid_reason,
)
from plan_build.review.layout import WorkflowDir
from plan_build.review.ledger import Entry
from plan_build.review.workflowfile import Workflow, read_text


class Step(StrEnum):
    WORKING = "working"
    REVIEW = "review"
    APPROVAL = "approval"
    COMPLETED = "completed"
    CANCELLED = "cancelled"


def read_optional(path: Path) -> str | None:
    if not path.is_file():
        return None
    return read_text(path)


@dataclass
class RoundView:
    wf: Workflow
    wdir: WorkflowDir
    review: str | None
    responses: str | None
    findings: list[Finding] = field(default_factory=list)
    decisions: dict[str, Decision | None] = field(default_factory=dict)
    step: Step = Step.WORKING
    malformed: str | None = None  # why the review file is not a review

    @property
    def phase(self) -> str:
        return self.wf.phase

    @property
    def round(self) -> int:
        return self.wf.round

    @property
    def review_path(self) -> Path:
        return self.wdir.review(self.phase, self.round)

    @property
    def findings_path(self) -> Path:
        return self.wdir.findings(self.phase, self.round)

    @property
    def reviewed(self) -> bool:
        return bool(self.review and self.review.strip()) and self.malformed is None

    @property
    def unparsed(self) -> list[tuple[Finding, Decision]]:
        """Findings whose 'Decision:' line holds a word that is no decision."""
        out = []
        for f in self.findings:
            d = self.decisions.get(f.id)
            if d is not None and d.unparsed is not None:
                out.append((f, d))
        return out

    @property
    def undecided(self) -> list[Finding]:
        return [f for f in self.findings if not decided(self.decisions.get(f.id))]

    def token(self, finding: Finding) -> str:
        d = self.decisions.get(finding.id)
        return d.token if d is not None else "OPEN"

    def entries(self) -> list[Entry]:
        return [Entry(f.reviewer, f.id, f.severity, f.text, self.token(f)) for f in self.findings]


def codex_part(review: str) -> str:
    """The review without the CodeRabbit part plan-build appends (what Codex answered)."""
    lines = review.split("\n")
    for i, line in enumerate(lines):
        if line.strip() == CODERABBIT_MARKER:
            return "\n".join(lines[:i])
    return review


def inspect(wf: Workflow, wdir: WorkflowDir) -> RoundView:
    review = read_optional(wdir.review(wf.phase, wf.round))
    responses = read_optional(wdir.findings(wf.phase, wf.round))
    return view_of(wf, wdir, review, responses)


def view_of(
    wf: Workflow, wdir: WorkflowDir, review: str | None, responses: str | None
) -> RoundView:
    """The round as these two texts make it (inspect reads them from the files)."""
    view = RoundView(wf, wdir, review, responses)
    if review is not None and review.strip():
        view.malformed = invalid_reason(codex_part(review))
    if view.reviewed:
        view.findings = extract(review or "")
        if responses is not None:
            view.decisions = decisions(view.findings, responses)
    if wf.status == "completed":
        view.step = Step.COMPLETED
    elif wf.status == "cancelled":
        view.step = Step.CANCELLED
    elif not view.reviewed:
        view.step = Step.WORKING
    elif not (responses and responses.strip()) or view.undecided:
        view.step = Step.REVIEW
    else:
        view.step = Step.APPROVAL
    return view


__all__ = ["RoundView", "Step", "codex_part", "inspect", "read_optional", "view_of"]
