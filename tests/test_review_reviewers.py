"""The reviewers up close: Codex's command line and event stream, CodeRabbit's two output
forms and version probes, what counts as skipped, and the progress line while a review runs."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from plan_build.core import codexusage
from plan_build.core.ui import Console
from plan_build.review import coderabbit, codex
from plan_build.review.reviewers import (
    Outcome,
    Progress,
    RawFinding,
    classify,
    duration,
    heartbeat_every,
)


def test_codex_command_is_read_only_with_json_and_an_output_file(tmp_path: Path) -> None:
    out = tmp_path / "last.md"
    argv, stdin = codex.command(out, "review this", "gpt-5.5")
    assert argv == [
        "codex",
        "exec",
        "--sandbox",
        "read-only",
        "--json",
        "-o",
        str(out),
        "-m",
        "gpt-5.5",
        "review this",
    ]
    assert stdin is None
    argv, stdin = codex.command(out, "x" * (codex.ARG_LIMIT + 1), None)
    assert argv[-1] == "-"
    assert stdin == "x" * (codex.ARG_LIMIT + 1)


def test_codex_timeout_and_model_come_from_codex_reviews_variables() -> None:
    assert codex.timeout_from({}, None) == 720
    assert codex.timeout_from({}, 90.0) == 90
    assert codex.timeout_from({"CODEX_CALL_TIMEOUT_SEC": "30"}, 90.0) == 30
    assert codex.timeout_from({"CODEX_CALL_TIMEOUT_SEC": "soon"}, None) == 720
    assert codex.model_from({}, None) is None
    assert codex.model_from({"CODEX_REVIEW_LOOP_MODEL": "o3"}, "cfg") == "o3"
    assert (
        codex.model_from({"CODEX_REVIEW_MODEL": "", "CODEX_REVIEW_LOOP_MODEL": ""}, "cfg") == "cfg"
    )


def test_progress_is_a_line_every_30s_without_a_terminal() -> None:
    import time

    stream = io.StringIO()
    progress = Progress(Console(stream=stream, fancy=False), ["coderabbit"])
    assert progress.every == 30.0
    progress.started = time.monotonic() - 95
    progress.render()
    assert stream.getvalue() == "  coderabbit reviewing · 1m35s\n"
    assert heartbeat_every({}) == 30.0
    assert heartbeat_every({"PLAN_BUILD_HEARTBEAT_SEC": "0.5"}) == 0.5
    for bad in ("nan", "inf", "-1", "0", "soon"):
        assert heartbeat_every({"PLAN_BUILD_HEARTBEAT_SEC": bad}) == 30.0


def test_skipped_or_failed() -> None:
    assert classify("codex", "unexpected status 429 Too Many Requests")[0] == "skipped"
    assert classify("codex", "unexpected status 401 Unauthorized")[1].startswith(
        "authentication failed"
    )
    assert classify("codex", "model not supported") == (
        "failed",
        "codex failed: model not supported",
    )
    assert duration(4) == "4s"
    assert duration(3725) == "1h02m"


def agent(*events: dict) -> list[dict]:
    return list(events)


def test_coderabbit_agent_events_become_findings() -> None:
    out = coderabbit.read_agent(
        agent(
            {"type": "status", "status": "reviewing"},
            {"type": "heartbeat"},
            {
                "type": "finding",
                "severity": "critical",
                "fileName": "a.py",
                "line": 4,
                "comment": "SQL injection\nuser input reaches execute()",
                "codegenInstructions": "Use parameters.",
            },
            {
                "type": "finding",
                "severity": "minor",
                "fileName": "b.py",
                "comment": "",
                "codegenInstructions": "Rename x.",
            },
            {"type": "complete", "status": "review_completed", "findings": 2},
        )
    )
    assert out.ok
    assert out.findings == [
        RawFinding(
            "CRITICAL", "SQL injection", "a.py:4", "user input reaches execute()\n\nUse parameters."
        ),
        RawFinding("MEDIUM", "Rename x.", "b.py", ""),
    ]


def test_coderabbit_without_a_complete_event_failed() -> None:
    out = coderabbit.read_agent(agent({"type": "status", "status": "reviewing"}))
    assert out.status == "failed"


def test_coderabbit_auth_error_is_skipped() -> None:
    out = coderabbit.read_agent(agent({"type": "error", "errorType": "auth", "message": "Log in"}))
    assert (out.status, out.reason) == ("skipped", "authentication failed (Log in)")


def test_plain_output_without_findings_or_completion_is_not_clean() -> None:
    assert coderabbit.read_plain("Review completed ✔\n").ok
    assert coderabbit.read_plain("Connecting...\n").status == "failed"
    assert coderabbit.read_plain("No files to review\n").status == "skipped"


def test_coderabbit_ids_continue_after_codexs() -> None:
    text, ids = coderabbit.section(
        Outcome(
            "coderabbit",
            "ok",
            findings=[
                RawFinding("LOW", "nit"),
                RawFinding("HIGH", "bug", "x.py:3", "why\nhow"),
            ],
        ),
        {"HIGH": 2, "LOW": 0},
    )
    assert ids == ["HIGH-3", "LOW-1"]
    assert "- [HIGH-3] `x.py:3` bug\n  > why\n  > how\n" in text
    assert "<!-- plan-build:coderabbit -->" in text


def test_coderabbit_command_by_cli_generation() -> None:
    assert coderabbit.command((0, 3, 4))[:3] == ["coderabbit", "review", "--plain"]
    assert coderabbit.command((0, 4, 0)) == ["coderabbit", "review", "--agent", "--uncommitted"]
    assert coderabbit.command(None)[2] == "--plain"


def test_codex_events_parse_ignores_noise(tmp_path: Path) -> None:
    stream = tmp_path / "codex-last-message.events.jsonl"
    stream.write_text(
        "WARNING: proceeding\n" + json.dumps({"type": "turn.started"}) + "\n{broken\n"
    )
    assert list(codexusage.events(stream)) == [{"type": "turn.started"}]


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ({"stdout": "0.4.1\n"}, (0, 4, 1)),
        ({"stdout": "coderabbit v1.2\n"}, (1, 2)),
        ({"stdout": "", "stderr": "0.3.9\n"}, (0, 3, 9)),  # some builds print it on stderr
        ({"stdout": "unknown\n"}, None),
        ({"stdout": "0.4.1\n", "returncode": 2}, None),  # a version that failed is no version
    ],
)
def test_coderabbit_version_probe_reads_what_the_cli_prints(
    fp: Any, tmp_path: Path, answer: dict[str, Any], expected: tuple[int, ...] | None
) -> None:
    """One process's output, faked with pytest-subprocess: nothing else may run."""
    fp.register(["coderabbit", "--version"], **answer)
    assert coderabbit.version({}, tmp_path) == expected
    # and the review command follows the generation it found
    agent = expected is not None and expected >= coderabbit.AGENT_SINCE
    assert ("--agent" in coderabbit.command(expected)) is agent


@pytest.mark.parametrize(
    ("help_text", "untracked"),
    [
        ("  --uncommitted\n  --include-untracked  also review untracked files\n", True),
        ("  --uncommitted  review uncommitted changes\n", False),
    ],
)
def test_coderabbit_untracked_probe_reads_the_review_help(
    fp: Any, tmp_path: Path, help_text: str, untracked: bool
) -> None:
    fp.register(["coderabbit", "review", "--help"], stdout=help_text)
    assert coderabbit.supports_untracked({}, tmp_path) is untracked
