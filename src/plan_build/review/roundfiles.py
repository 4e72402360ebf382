"""plan-build's own per-round files beside codex-review's artifacts.

`<phase>-round-r<N>.json` says how round N was reviewed: which reviewers ran or were skipped
and why, the tree id of the change (implementation rounds) and the plan's sha256. It is
rewritten only while its round is the current one and has no review yet.

Each reviewer's entry also keeps the token use Codex reported for its runs (`usage_sum`; a
reader skips keys it does not know, so records stay readable both ways).

`<phase>-approval-r<N>.json` is written once, when round N is approved: what was approved
(tree, plan), which low findings were deferred and which skipped reviewers were waived, and
that the user confirmed those on a terminal. It counts only with its protected twin under the
git dir (review/twins.py, docs/adr/0192).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from plan_build.core.errors import ExitCode
from plan_build.core.fsutil import StateFileError, atomic_write, read_json
from plan_build.review.layout import WorkflowDir

FORMAT = 1
FILE_MODE = 0o644


@dataclass
class ReviewerRun:
    name: str
    status: str  # "ok" | "skipped" | "failed"
    reason: str | None = None
    seconds: float = 0.0
    findings: list[str] = field(default_factory=list)
    argv: list[str] = field(default_factory=list)
    log: str | None = None
    exit_code: int | None = None
    stderr_tail: str | None = None
    # Codex's token use over the reviewer's runs (`codexusage.Summed`); None: not a Codex run,
    # or a record written before plan-build kept it
    usage_sum: dict[str, Any] | None = None

    @property
    def clean(self) -> bool:
        return self.status == "ok"


@dataclass
class RoundRecord:
    phase: str
    round: int
    started_at: str
    finished_at: str | None = None
    reviewed_tree: str | None = None
    tree_after: str | None = None
    head: str | None = None
    plan_sha256: str | None = None
    reviewers: dict[str, ReviewerRun] = field(default_factory=dict)

    def not_clean(self) -> list[ReviewerRun]:
        return [r for r in self.reviewers.values() if not r.clean]


@dataclass
class ApprovalRecord:
    phase: str
    round: int
    approved_at: str
    reviewed_tree: str | None = None
    plan_sha256: str | None = None
    session: str | None = None
    deferred: list[dict[str, str]] = field(default_factory=list)
    waived: list[dict[str, str]] = field(default_factory=list)
    confirmed_on_terminal: bool = False
    confirmed_how: str = ""  # what was established (core/confirmation.py), never a conclusion


def sha256_file(path: Path) -> str | None:
    import hashlib  # loads OpenSSL: only a plan round's check and its approval hash a file

    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return None


def _dump(obj: Any) -> str:
    return json.dumps({"plan_build_format": FORMAT, **asdict(obj)}, indent=2) + "\n"


def _load_json(path: Path) -> dict[str, Any] | None:
    try:
        data = read_json(path, _FIX)
    except FileNotFoundError:
        return None
    except StateFileError as exc:
        raise _corrupt(path, exc.why) from exc
    if not isinstance(data, dict):
        raise _corrupt(path, "not a JSON object")
    if data.get("plan_build_format", FORMAT) != FORMAT:
        raise _corrupt(path, f"format {data.get('plan_build_format')!r} is not {FORMAT}")
    return data


_FIX = "restore it, or delete it to forget what plan-build recorded about that round"


def _corrupt(path: Path, why: str) -> StateFileError:
    return StateFileError(path, why, _FIX, code=ExitCode.USAGE, what=f"{path} is unreadable: {why}")


def load_round(wdir: WorkflowDir, phase: str, round: int) -> RoundRecord | None:
    path = wdir.record(phase, round)
    data = _load_json(path)
    if data is None:
        return None
    try:
        known = ReviewerRun.__dataclass_fields__
        reviewers = {
            name: ReviewerRun(**{**{k: v for k, v in run.items() if k in known}, "name": name})
            for name, run in dict(data.get("reviewers") or {}).items()
        }
        fields = {k: v for k, v in data.items() if k in RoundRecord.__dataclass_fields__}
        fields["reviewers"] = reviewers
        return RoundRecord(**fields)
    except (TypeError, AttributeError) as exc:
        raise _corrupt(path, str(exc)) from exc


def save_round(wdir: WorkflowDir, record: RoundRecord) -> None:
    atomic_write(wdir.record(record.phase, record.round), _dump(record), mode=FILE_MODE)


def load_approval(wdir: WorkflowDir, phase: str, round: int) -> ApprovalRecord | None:
    path = wdir.approval(phase, round)
    data = _load_json(path)
    if data is None:
        return None
    try:
        fields = {k: v for k, v in data.items() if k in ApprovalRecord.__dataclass_fields__}
        return ApprovalRecord(**fields)
    except TypeError as exc:
        raise _corrupt(path, str(exc)) from exc


def approval_bytes(record: ApprovalRecord) -> bytes:
    """The approval file's exact bytes (its protected twin holds their sha256: review/twins)."""
    return _dump(record).encode("utf-8")


def save_approval(wdir: WorkflowDir, record: ApprovalRecord) -> None:
    atomic_write(wdir.approval(record.phase, record.round), approval_bytes(record), mode=FILE_MODE)


__all__ = [
    "ApprovalRecord",
    "ReviewerRun",
    "RoundRecord",
    "approval_bytes",
    "load_approval",
    "load_round",
    "save_approval",
    "save_round",
    "sha256_file",
]
