"""Helpers for review scenarios: a Claude session file for this test process (an ancestor of
every `plan-build` the test runs), stub Codex/CodeRabbit answers in the real CLIs' shapes, and
paths into a workflow."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from plan_build.core.claudesessions import process_start
from tests.support import stubtool

SESSION_ID = "1dae44f1-1219-4786-b81f-7c23a218c0ac"
OTHER_SESSION = "9fae44f1-1219-4786-b81f-7c23a218c0ff"
WORKFLOWS = Path(".claude") / "codex-review" / "workflows"

PLAN_REVIEW = (
    "## Findings\n\n"
    "[HIGH-1] The plan has no rollback step.\n"
    "If the migration fails half-way the table is left without its index.\n\n"
    "[LOW-1] Step 2 says 'endpont'.\n\n"
    "## Summary\nCritical: 0\nHigh: 1\nMedium: 0\nLow: 1\n"
)
IMPL_REVIEW = (
    "## Plan Adherence\nFollows the plan.\n\n## Findings\n"
    "[MEDIUM-1] app.py:3 the limit is not validated.\n\n"
    "## Test Coverage\nNone.\n\n## Summary\nCritical: 0\nHigh: 0\nMedium: 1\nLow: 0\n"
)
CLEAN = "## Findings\nNo findings.\n\n## Summary\nCritical: 0\nHigh: 0\nMedium: 0\nLow: 0\n"


def claude_session(home: Path, cwd: Path, sid: str = SESSION_ID, pid: int | None = None) -> int:
    """Pretend this test process is an interactive Claude Code session in `cwd`."""
    pid = pid or os.getpid()
    path = home / ".claude" / "sessions" / f"{pid}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(
            {
                "pid": pid,
                "sessionId": sid,
                "cwd": str(cwd),
                "startedAt": int(time.time() * 1000),
                "procStart": process_start(pid),
                "version": "2.1.332",
                "kind": "interactive",
                "entrypoint": "cli",
            }
        )
    )
    return pid


def codex_events(text: str) -> str:
    """`codex exec --json` for a turn that answers `text` (the real CLI's shapes)."""
    return stubtool.codex_exec_events(text)


def codex_rule(text: str, **extra: Any) -> dict[str, Any]:
    """`codex exec` answering `text` the way Codex does: -o FILE plus the JSON event stream."""
    return {"match": ["exec"], "write_flag": {"-o": text}, "stdout": codex_events(text), **extra}


def codex_failure(message: str, **extra: Any) -> dict[str, Any]:
    """`codex exec` whose turn the API refused: the real CLI's retries, error and exit 1."""
    return {
        "match": ["exec"],
        "stdout": stubtool.codex_exec_failed_events(message),
        "exit": 1,
        **extra,
    }


def rabbit_agent(*events: dict[str, Any], **extra: Any) -> list[dict[str, Any]]:
    """CodeRabbit >= 0.4 answering `review --agent` with NDJSON events."""
    lines = [
        {"type": "review_context", "workingDirectory": "."},
        {"type": "status", "status": "reviewing"},
        *events,
    ]
    return [
        {"match": ["--version"], "stdout": "0.4.2\n"},
        {
            "match": ["review"],
            "stdout": "".join(json.dumps(e) + "\n" for e in lines),
            **extra,
        },
    ]


def rabbit_finding(severity: str, file: str, comment: str) -> dict[str, Any]:
    return {
        "type": "finding",
        "severity": severity,
        "fileName": file,
        "comment": comment,
        "codegenInstructions": "",
        "suggestions": [],
    }


def rabbit_complete(findings: int = 0, status: str = "review_completed") -> dict[str, Any]:
    return {"type": "complete", "status": status, "findings": findings, "message": "done"}


def only_workflow(root: Path) -> Path:
    dirs = [p for p in (root / WORKFLOWS).iterdir() if p.is_dir()]
    assert len(dirs) == 1, dirs
    return dirs[0]


def tree_bytes(root: Path) -> dict[str, bytes]:
    base = root / ".claude"
    if not base.exists():
        return {}
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(base.rglob("*")) if p.is_file()
    }


PLAN = "# Add pagination\n\n1. Add `limit` to GET /audit.\n2. Test it.\n"


def decide(wf: Path, phase: str, rnd: int, text: str) -> None:
    """Write the findings file of round `rnd` (the decisions, as Claude or the user would)."""
    (wf / "artifacts" / f"{phase}-findings-r{rnd}.md").write_text(text)


def start_plan_review(cli: Any, stubs: Any, project: Path, review: str = PLAN_REVIEW) -> Path:
    """`review.plan` of ../plan.md with Codex answering `review`; the new workflow's folder."""
    stubs.rule("codex", codex_rule(review))
    r = cli("review.plan", "--plan", "../plan.md", cwd=project)
    assert r.code in (0, 6), r.stderr
    return only_workflow(project)
