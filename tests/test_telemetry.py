"""What Codex's `--json` stream tells plan-build, and the dispatch statistics."""

# ruff: noqa: E501 (recorded event streams are kept verbatim, one event per line)

from __future__ import annotations

import json
from pathlib import Path

from plan_build.dispatch import telemetry

SUCCESS = """\
{"type":"thread.started","thread_id":"01a22a0c-1f0b-7461-8cfe-43e314f760ae"}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"item_0","type":"error","message":"Model metadata for `mock-model` not found"}}
{"type":"item.completed","item":{"id":"item_1","type":"file_change","changes":[{"path":"src/app.py","kind":"update"}],"status":"completed"}}
{"type":"item.completed","item":{"id":"item_2","type":"command_execution","command":"pytest","aggregated_output":"ok","exit_code":0,"status":"completed"}}
{"type":"item.completed","item":{"id":"item_3","type":"agent_message","text":"MOCK-REPLY: done"}}
{"type":"turn.completed","usage":{"input_tokens":10,"cached_input_tokens":0,"cache_write_input_tokens":0,"output_tokens":5,"reasoning_output_tokens":0}}
"""

UNAUTHORIZED = """\
{"type":"thread.started","thread_id":"t"}
{"type":"turn.started"}
{"type":"error","message":"Reconnecting... 1/5 (unexpected status 401 Unauthorized: x)"}
{"type":"turn.failed","error":{"message":"unexpected status 401 Unauthorized: Incorrect API key"}}
"""

OFFLINE = """\
{"type":"thread.started","thread_id":"t"}
{"type":"turn.started"}
{"type":"error","message":"Reconnecting... 2/5 (failed to lookup address information)"}
{"type":"error","message":"Reconnecting... waiting for network"}
"""


def test_a_successful_stream() -> None:
    ev = telemetry.parse_events(SUCCESS)
    assert ev.events == 7
    assert ev.thread_id == "01a22a0c-1f0b-7461-8cfe-43e314f760ae"
    assert ev.final_message == "MOCK-REPLY: done"
    assert ev.usage.as_json() == {
        "input": 10,
        "cached_input": 0,
        "cache_write_input": 0,
        "output": 5,
        "reasoning_output": 0,
        "total": 15,
    }
    assert ev.files_reported == ["src/app.py"]
    assert ev.commands == 1
    assert ev.failures == []
    assert ev.errors == ["Model metadata for `mock-model` not found"]


def test_a_failed_turn_has_no_usage_and_names_the_failure() -> None:
    ev = telemetry.parse_events(UNAUTHORIZED)
    assert ev.usage.as_json() is None  # unknown, not 0
    assert ev.failures == ["unexpected status 401 Unauthorized: Incorrect API key"]
    assert ev.final_message is None


def test_an_offline_stream_is_only_errors() -> None:
    ev = telemetry.parse_events(OFFLINE)
    assert ev.turn_completed is False
    assert not ev.usage.known
    assert len(ev.errors) == 2


def test_garbage_lines_are_counted_not_trusted() -> None:
    ev = telemetry.parse_events(
        'WARNING: noise\n[1,2]\n{"type":"turn.completed","usage":{"input_tokens":"lots"}}\n'
    )
    assert ev.unparsable == 2
    assert ev.events == 1
    assert not ev.usage.known  # a non-integer count is not a count


def test_usage_is_summed_over_turns() -> None:
    two = (
        '{"type":"turn.completed","usage":{"input_tokens":10,"output_tokens":5}}\n'
        '{"type":"turn.completed","usage":{"input_tokens":7,"output_tokens":1}}\n'
    )
    usage = telemetry.parse_events(two).usage
    assert (usage.input, usage.output, usage.total) == (17, 6, 23)
    assert usage.cached_input is None  # never reported: unknown, not 0


def test_the_file_and_the_text_read_the_same(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text(SUCCESS + "{torn", encoding="utf-8")
    from_file, from_text = telemetry.parse_file(path), telemetry.parse_events(SUCCESS + "{torn")
    assert from_file == from_text
    assert from_file.unparsable == 1
    assert telemetry.parse_file(tmp_path / "missing.jsonl").events == 0


def test_records_old_and_new_give_their_usage() -> None:
    old = {"tokens": {"input_tokens": 4, "output_tokens": 1}}
    new = {"usage": {"input": 4, "output": 1, "total": 5}}
    assert telemetry.usage_of(old).total == telemetry.usage_of(new).total == 5
    assert not telemetry.usage_of({"tokens": "unknown"}).known
    assert not telemetry.usage_of({"usage": None}).known


def test_stats_summarise_attempts_first_success_and_exhausted_caps(tmp_path: Path) -> None:
    rec = {"id": "codex-v1", "fingerprint": "sha256:abc"}
    rows = [
        {
            "kind": "attempt",
            "role": "implementer",
            "codex": {"seconds": 10},
            "outcome": "verified",
            "tokens": {"input_tokens": 100},
        },
        {
            "kind": "dispatch",
            "outcome": "Review",
            "attempts": 1,
            "reason": "verified",
            "exhausted": False,
            "recipe": rec,
        },
        {
            "kind": "attempt",
            "role": "implementer",
            "codex": {"seconds": 20},
            "outcome": "verification_failed",
            "tokens": "unknown",
        },
        {
            "kind": "attempt",
            "role": "corrector",
            "codex": {"seconds": 4},
            "outcome": "verification_failed",
            "tokens": {"input_tokens": 50},
        },
        {
            "kind": "attempt",
            "role": "corrector",
            "codex": {"seconds": 6},
            "outcome": "verification_failed",
            "tokens": {"input_tokens": 50},
        },
        {
            "kind": "dispatch",
            "outcome": "Blocked",
            "attempts": 3,
            "reason": "corrections_exhausted",
            "exhausted": True,
            "recipe": rec,
        },
        {
            "kind": "dispatch",
            "outcome": "In Progress",
            "attempts": 0,
            "reason": "interrupted",
            "exhausted": False,
            "recipe": rec,
        },
    ]
    for row in rows:
        telemetry.append(tmp_path, row)
    with telemetry.log_path(tmp_path).open("a") as fh:
        fh.write("{torn line\n")

    s = telemetry.stats(tmp_path)

    assert s["dispatches"] == 3
    assert s["attempts"] == 4
    assert s["first_attempt_success"] == {"count": 1, "of": 2, "rate": 0.5}
    assert s["exhausted_caps"] == 1
    assert s["outcomes"] == {"Review": 1, "Blocked": 1, "In Progress": 1}
    assert s["by_role"]["implementer"] == {"attempts": 2, "verified": 1, "mean_codex_seconds": 15.0}
    assert s["by_role"]["corrector"]["mean_codex_seconds"] == 5.0
    assert s["tokens"] == {
        # records from before plan-build kept `usage` still count: only what they reported
        "reported": {
            "input": 200,
            "cached_input": None,
            "cache_write_input": None,
            "output": None,
            "reasoning_output": None,
            "total": None,
        },
        "attempts_with_usage": 3,
        "attempts_unknown": 1,
    }
    assert s["recipes"] == {"sha256:abc": {"id": "codex-v1", "dispatches": 3}}
    assert s["unreadable_lines"] == 1
    first = json.loads(telemetry.log_path(tmp_path).read_text().splitlines()[0])
    assert first["schema"] == telemetry.SCHEMA


def test_stats_of_an_empty_log(tmp_path: Path) -> None:
    s = telemetry.stats(tmp_path)
    assert s["dispatches"] == 0
    assert s["first_attempt_success"]["rate"] is None


def _command(output: str, exit_code: int) -> str:
    item = {
        "id": "item_0",
        "type": "command_execution",
        "command": "/bin/zsh -lc 'cat src/app.py'",
        "aggregated_output": output,
        "exit_code": exit_code,
        "status": "failed" if exit_code else "completed",
    }
    return json.dumps({"type": "item.completed", "item": item}) + "\n"


def test_seatbelt_failing_to_start_is_a_sandbox_error() -> None:
    # macOS wording (openai/codex issues 45657 and 38286): sandbox-exec speaks only when it
    # cannot apply the profile or exec the command, and then exits 71
    nested = "sandbox-exec: sandbox_apply: Operation not permitted\n"
    execvp = (
        "fs sandbox helper failed with status exit status: 71:\n"
        "/usr/bin/sandbox-exec: execvp() of '/opt/codex/bin/codex' failed: "
        "Operation not permitted\n"
    )
    events = telemetry.parse_events(_command(nested, 71) + _command(execvp, 71))
    assert events.sandbox_errors == [
        "sandbox-exec: sandbox_apply: Operation not permitted",
        "/usr/bin/sandbox-exec: execvp() of '/opt/codex/bin/codex' failed: Operation not permitted",
    ]


def test_a_command_the_seatbelt_profile_denies_is_not_a_sandbox_failure() -> None:
    # the sandbox started and did its job: the command ran and was refused a write
    denied = "touch: /etc/hosts: Operation not permitted\n/bin/ps: Operation not permitted\n"
    assert telemetry.parse_events(_command(denied, 1)).sandbox_errors == []
    # sandbox-exec named in a command's successful output is no failure either
    assert telemetry.parse_events(_command("sandbox-exec: usage\n", 0)).sandbox_errors == []
