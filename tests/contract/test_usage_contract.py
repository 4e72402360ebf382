"""Token use with the real `codex exec`: the loopback Responses API sends a chosen `usage` in
`response.completed`, and what plan-build records (telemetry, the task state `status` reads, a
review round's record) is exactly what Codex reported for it (docs/adr/0175).

Verified against codex-cli 0.171.0: Codex relays the Responses usage field for field
(`input_tokens`; `input_tokens_details.cached_tokens` as `cached_input_tokens`; `output_tokens`;
`output_tokens_details.reasoning_tokens` as `reasoning_output_tokens`; 0 for
`cache_write_input_tokens`, which the Responses API has no field for), sums every model request
of a turn into its one `turn.completed`, and reports all zeros when the provider sent no usage.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from plan_build.dispatch import telemetry
from tests.contract.conftest import Agents
from tests.contract.fakeapis import ResponsesApi
from tests.support.dispatching import make_plan
from tests.support.reviewkit import CLEAN, only_workflow

pytestmark = pytest.mark.contract

DEGRADED = {"PLAN_BUILD_MEMORY_MODE": "degraded"}
FIX = "printf 'def view(page=1):\\n    return []  # fixed\\n' > src/app.py"
SENT = {
    "input_tokens": 1234,
    "input_tokens_details": {"cached_tokens": 200},
    "output_tokens": 56,
    "output_tokens_details": {"reasoning_tokens": 7},
    "total_tokens": 1290,
}


def recorded(requests: int) -> dict[str, int]:
    """What plan-build records for `requests` model requests of SENT, as Codex sums them."""
    return {
        "input": 1234 * requests,
        "cached_input": 200 * requests,
        "cache_write_input": 0,
        "output": 56 * requests,
        "reasoning_output": 7 * requests,
        "total": 1290 * requests,
    }


def records(repo: Path, kind: str) -> list[dict[str, Any]]:
    rows, _ = telemetry.read(repo / ".git" / "plan-build")
    return [r for r in rows if r["kind"] == kind]


def test_a_dispatch_records_the_tokens_the_endpoint_sent(
    cli: Any, repo: Path, agents: Agents, codex_api: ResponsesApi
) -> None:
    make_plan(repo)
    codex_api.commands = [FIX]  # two model requests in the one turn: the command, the answer
    codex_api.usage = SENT

    assert cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED).code == 0

    requests = len(codex_api.turns())
    assert requests == 2
    [attempt] = records(repo, "attempt")
    assert attempt["usage"] == recorded(requests)
    [summary] = records(repo, "dispatch")
    assert summary["usage_sum"] == {**recorded(requests), "runs": 1, "unknown_runs": 0}
    assert (
        "2,580 tokens (in 2,468, cached 400, out 112, reasoning 14)"
        in (repo / "TASKS.md").read_text()
    )
    # status shows the task's tokens from its state; tasks --stats sums the log
    assert cli("baseline", cwd=repo).code == 0
    status = cli("status", "--json", cwd=repo)
    [used] = json.loads(status.stdout)["tasks"]["usage"]
    assert used == {"task": "TASK-002", **recorded(requests), "runs": 1, "unknown_runs": 0}
    assert "TASK-002 2,580 tokens" in status.stderr
    stats = json.loads(cli("tasks", "--stats", "--json", cwd=repo).stdout)["tokens"]
    assert stats["reported"] == recorded(requests)


def test_an_endpoint_that_sends_no_usage_is_recorded_as_codex_reports_it(
    cli: Any, repo: Path, agents: Agents, codex_api: ResponsesApi
) -> None:
    """Codex 0.171.0 turns a missing usage into zeros; plan-build records the tool's figures,
    never its own: 0 here, as the ADR and docs/dispatch.md say."""
    make_plan(repo)
    codex_api.commands = [FIX]
    codex_api.usage = None

    assert cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED).code == 0

    [attempt] = records(repo, "attempt")
    assert attempt["usage"] == {**recorded(0)}


def test_a_refused_turn_has_unknown_usage(
    cli: Any, repo: Path, agents: Agents, codex_api: ResponsesApi
) -> None:
    make_plan(repo)
    codex_api.scenario = "unauthorized"

    assert cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED).code == 6

    [attempt] = records(repo, "attempt")
    assert attempt["usage"] is None  # no turn completed: unknown, not 0
    assert records(repo, "dispatch")[0]["usage_sum"]["unknown_runs"] == 1
    assert "tokens unknown" in (repo / "TASKS.md").read_text()


def test_a_review_round_records_the_reviewers_tokens(
    cli: Any, repo: Path, agents: Agents, codex_api: ResponsesApi
) -> None:
    (repo.parent / "plan.md").write_text("# Add pagination\n\n1. Add `limit`.\n")
    codex_api.reply = CLEAN
    codex_api.usage = SENT

    r = cli("review.plan", "--plan", "../plan.md", cwd=repo)

    assert r.code == 0, r.stderr
    assert "1,290 tokens" in r.stderr  # the reviewer's line names them
    wf = only_workflow(repo)
    record = json.loads((wf / "artifacts" / "plan-round-r1.json").read_text())
    assert record["reviewers"]["codex"]["usage_sum"] == {
        **recorded(len(codex_api.turns())),
        "runs": 1,
        "unknown_runs": 0,
    }
    status = json.loads(cli("review.status", "--json", cwd=repo).stdout)
    assert status["round"] == 1
