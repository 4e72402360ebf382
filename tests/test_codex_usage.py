"""Token use is Codex's own `turn.completed` figures, never a guess (docs/adr/0175): the parser's
fault cases, the stream read from a file without holding it, and what a dispatch, a review
round, `status` and the report make of a stub Codex that prints the real CLI's event shapes."""

from __future__ import annotations

import json
import math
import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from plan_build.core import codexusage, proc
from plan_build.core.codexusage import Usage
from plan_build.core.errors import PlanBuildError
from plan_build.dispatch import telemetry
from plan_build.review import codex
from plan_build.views import report as report_view
from plan_build.views import story as st
from tests.support import dispatching as dispatch_support
from tests.support import reviewkit, stories
from tests.support.dispatching import codex_edits, make_plan
from tests.support.reviewkit import CLEAN, PLAN, claude_session, codex_rule, only_workflow

DEGRADED = {"PLAN_BUILD_MEMORY_MODE": "degraded"}
FULL = {
    "input_tokens": 1234,
    "cached_input_tokens": 200,
    "cache_write_input_tokens": 0,
    "output_tokens": 56,
    "reasoning_output_tokens": 7,
}


def line(event: dict[str, Any]) -> str:
    return json.dumps(event) + "\n"


def done(usage: Any) -> str:
    return line({"type": "turn.completed", "usage": usage})


def usage_of(text: str, tmp_path: Path) -> Usage:
    path = tmp_path / "events.jsonl"
    path.write_text(text, encoding="utf-8")
    return codexusage.of_file(path)


# --- the parser --------------------------------------------------------------------------


def test_one_turn_is_read_field_by_field_with_input_plus_output_as_total(tmp_path: Path) -> None:
    u = usage_of(line({"type": "turn.started"}) + done(FULL), tmp_path)
    assert u.as_json() == {
        "input": 1234,
        "cached_input": 200,
        "cache_write_input": 0,
        "output": 56,
        "reasoning_output": 7,
        "total": 1290,
    }


def test_several_turns_are_summed(tmp_path: Path) -> None:
    u = usage_of(done(FULL) + done({**FULL, "input_tokens": 6, "output_tokens": 4}), tmp_path)
    assert (u.input, u.cached_input, u.output, u.reasoning_output) == (1240, 400, 60, 14)
    assert u.total == 1300


@pytest.mark.parametrize(
    "bad",
    [
        "lots",
        "NaN",
        "1e3",
        "12",  # a number in a string is not what Codex prints: not trusted either
        -5,
        True,
        None,
        1.5,
        [3],
        {"n": 3},
        10**16,  # past MAX_TOKENS: not a count
    ],
)
def test_a_field_that_is_not_a_count_is_unknown_not_zero(bad: Any, tmp_path: Path) -> None:
    u = usage_of(done({**FULL, "output_tokens": bad}), tmp_path)
    assert u.output is None
    assert u.total is None  # no total without the output
    assert u.input == 1234  # the other fields still count
    assert codexusage.short(u) == "tokens partly unknown"


def test_nan_and_infinity_as_json_numbers_are_not_counts(tmp_path: Path) -> None:
    text = '{"type":"turn.completed","usage":{"input_tokens":NaN,"output_tokens":Infinity}}\n'
    u = usage_of(text, tmp_path)
    assert (u.input, u.output, u.known) == (None, None, False)
    assert codexusage.count(7.0) == 7  # a whole float is a count
    assert codexusage.count(math.inf) is None


def test_a_field_missing_from_one_turn_is_unknown_in_the_sum(tmp_path: Path) -> None:
    older = {k: v for k, v in FULL.items() if k != "cache_write_input_tokens"}
    u = usage_of(done(FULL) + done(older), tmp_path)
    assert u.cache_write_input is None
    assert u.input == 2468


def test_no_usage_at_all_is_unknown_and_distinct_from_zero(tmp_path: Path) -> None:
    failed = line({"type": "turn.started"}) + line(
        {"type": "turn.failed", "error": {"message": "unexpected status 401"}}
    )
    assert usage_of(failed, tmp_path).as_json() is None
    assert usage_of("", tmp_path) == codexusage.UNKNOWN
    assert usage_of(done(None) + done("10"), tmp_path).as_json() is None
    zeros = usage_of(done(dict.fromkeys(FULL, 0)), tmp_path)
    assert zeros.known  # Codex said 0: recorded as 0
    assert zeros.total == 0
    assert codexusage.words(codexusage.UNKNOWN) == "unknown"


def test_noise_a_truncated_last_line_and_non_objects_are_skipped(tmp_path: Path) -> None:
    text = (
        "WARNING: proceeding, even though we could not create PATH aliases\n"
        "[1, 2]\n\n"
        + done(FULL)
        + '"just a string"\n'
        + '{"type":"turn.completed","usage":{"input_tokens":99'  # cut off mid-line
    )
    path = tmp_path / "events.jsonl"
    path.write_text(text, encoding="utf-8")
    skipped = [0]
    assert [e["type"] for e in codexusage.events(path, skipped)] == ["turn.completed"]
    assert skipped == [4]
    assert codexusage.of_file(path).input == 1234
    assert telemetry.parse_file(path).unparsable == 4


def test_a_line_past_the_limit_is_skipped_without_reading_it_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(codexusage, "MAX_LINE", 1024)
    huge = line({"type": "item.completed", "item": {"text": "x" * 50_000}})
    path = tmp_path / "events.jsonl"
    path.write_text(huge + done(FULL) + huge, encoding="utf-8")
    skipped = [0]
    assert [e["type"] for e in codexusage.events(path, skipped)] == ["turn.completed"]
    assert skipped == [2]


def test_a_missing_file_is_no_events(tmp_path: Path) -> None:
    assert list(codexusage.events(tmp_path / "gone.jsonl")) == []
    assert not codexusage.of_file(tmp_path / "gone.jsonl").known


JSON = hs.recursive(
    hs.none()
    | hs.booleans()
    | hs.integers(min_value=-(10**20), max_value=10**20)
    | hs.floats(allow_nan=True, allow_infinity=True)
    | hs.text(max_size=8),
    lambda inner: hs.lists(inner, max_size=3) | hs.dictionaries(hs.text(max_size=6), inner),
    max_leaves=12,
)
FIELD_VALUE = JSON | hs.integers(min_value=0, max_value=codexusage.MAX_TOKENS)


@settings(max_examples=200, deadline=None)
@given(hs.lists(hs.dictionaries(hs.sampled_from(list(FULL)), FIELD_VALUE) | JSON, max_size=4))
def test_any_usage_values_give_counts_or_unknown_never_a_crash(usages: list[Any]) -> None:
    tally = codexusage.Tally()
    for value in usages:
        tally.add({"type": "turn.completed", "usage": value})
    u = tally.usage
    for name in codexusage.NAMES:
        value = getattr(u, name)
        assert value is None or (isinstance(value, int) and value >= 0)
    # a field is known only when every turn reported it as a count, and is then their sum
    for name, key in codexusage.FIELDS:
        counts = [codexusage.count(v.get(key)) if isinstance(v, dict) else None for v in usages]
        total = sum(c for c in counts if c is not None)
        if usages and all(c is not None for c in counts) and total <= codexusage.MAX_TOKENS:
            assert getattr(u, name) == total
        else:
            assert getattr(u, name) is None
    assert codexusage.from_json(u.as_json()) == u  # what telemetry stores reads back the same


@settings(max_examples=100, deadline=None)
@given(hs.binary(max_size=400))
def test_any_bytes_in_the_stream_never_crash_the_reader(data: bytes) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "events.jsonl"
        path.write_bytes(data + b"\n" + done(FULL).encode())
        assert codexusage.of_file(path).input in (1234, None, *range(1234, 1234 * 3))


@settings(max_examples=100, deadline=None)
@given(JSON)
def test_records_of_any_shape_read_as_a_sum_or_nothing(value: Any) -> None:
    s = codexusage.sum_from_json(value)
    assert 0 <= s.unknown_runs <= s.runs
    assert isinstance(codexusage.short_sum(s), str)
    assert isinstance(codexusage.words_sum(s), str)


def test_sums_over_runs_keep_the_unknown_runs_apart() -> None:
    known = codexusage.from_event(FULL)
    s = codexusage.summed([known, codexusage.UNKNOWN, known])
    assert (s.usage.total, s.runs, s.unknown_runs) == (2580, 3, 1)
    assert codexusage.short_sum(s) == "2,580 tokens + 1 run unknown"
    assert codexusage.sum_from_json(s.as_json()) == s
    assert codexusage.short_sum(codexusage.summed([codexusage.UNKNOWN])) == "tokens unknown"
    both = codexusage.combined([s, codexusage.summed([known])])
    assert (both.usage.input, both.runs, both.unknown_runs) == (3702, 4, 1)


# --- the process seam ----------------------------------------------------------------------


def test_stdout_to_a_file_is_never_captured(tmp_path: Path) -> None:
    out = tmp_path / "stream.jsonl"
    code = "import sys\nfor i in range(20000): sys.stdout.write('x' * 99 + '\\n')\n"
    done_ = proc.run([sys.executable, "-c", code], stdout_file=out, timeout=30)
    assert done_.stdout == ""
    assert out.stat().st_size == 20000 * 100
    assert stat.S_IMODE(out.stat().st_mode) == 0o600


def test_a_timed_out_run_leaves_its_output_in_the_file(tmp_path: Path) -> None:
    out = tmp_path / "stream.jsonl"
    code = (
        f"import sys, time\nsys.stdout.write({done(FULL)!r}); sys.stdout.flush()\ntime.sleep(30)\n"
    )
    with pytest.raises(proc.CommandTimeout) as caught:
        proc.run([sys.executable, "-c", code], stdout_file=out, timeout=1.5, supervised=True)
    assert caught.value.stdout == ""
    assert codexusage.of_file(out).total == 1290


def test_a_stream_both_told_line_by_line_and_kept_in_its_file(tmp_path: Path) -> None:
    """A wave's Codex run: progress sees each event as it comes, the usage is read from the
    file afterwards, and nothing of the stream is held in memory."""
    out = tmp_path / "stream.jsonl"
    code = f"import sys\nsys.stdout.write({done(FULL)!r})\n"
    seen: list[str] = []
    done_ = proc.run([sys.executable, "-c", code], stdout_file=out, on_line=seen.append, timeout=30)
    assert done_.stdout == ""
    assert "".join(seen) == out.read_text() == done(FULL)
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert codexusage.of_file(out).total == 1290


def test_the_stream_file_is_never_written_through_a_symlink(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.txt"
    target.write_text("kept\n")
    link = tmp_path / "stream.jsonl"
    os.symlink(target, link)
    with pytest.raises(PlanBuildError, match="cannot write the command's output"):
        proc.run([sys.executable, "-c", "print(1)"], stdout_file=link)
    assert target.read_text() == "kept\n"


# --- a dispatch with a stub Codex ------------------------------------------------------------


def records(repo: Path, kind: str) -> list[dict[str, Any]]:
    rows, _ = telemetry.read(repo / ".git" / "plan-build")
    return [r for r in rows if r["kind"] == kind]


def stream(*turns: Any, failed: bool = False) -> str:
    out = line({"type": "thread.started", "thread_id": "t-1"}) + line({"type": "turn.started"})
    out += "WARNING: noise that is not JSON\n"
    for usage in turns:
        out += done(usage)
    if failed:
        out += line({"type": "turn.failed", "error": {"message": "stream disconnected"}})
    return out


def test_a_dispatch_records_every_attempt_and_sums_them_with_the_unknown_counted(
    repo: Path, stubs: Any, cli: Any
) -> None:
    """The first run reports two turns (summed) and fails its checks; the correction's stream
    carries no usage: its usage is null, the dispatch's sum names it as unknown, and
    `tasks --stats` and `status` say the same."""
    make_plan(repo)  # its check passes once src/app.py says "fixed"
    codex_edits(stubs, {"src/app.py": "fixed\n"}, usage=False)  # the correction
    stubs.rule(  # the first run (a rule added later is asked first)
        "codex",
        {
            "match": ["exec"],
            "write": {"src/app.py": "half\n"},
            "stdout": stream(FULL, {**FULL, "input_tokens": 6, "output_tokens": 4}),
            "write_flag": {"-o": "Tried."},
            "times": 1,
        },
    )

    assert cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED).code == 0

    first, second = records(repo, "attempt")
    assert first["usage"]["total"] == 1300
    assert first["usage"]["cached_input"] == 400
    assert second["usage"] is None
    [summary] = records(repo, "dispatch")
    assert summary["usage_sum"]["total"] == 1300
    assert (summary["usage_sum"]["runs"], summary["usage_sum"]["unknown_runs"]) == (2, 1)

    stats = cli("tasks", "--stats", "--json", cwd=repo)
    tokens = json.loads(stats.stdout)["tokens"]
    assert tokens["reported"]["total"] == 1300
    assert (tokens["attempts_with_usage"], tokens["attempts_unknown"]) == (1, 1)
    text = cli("tasks", "--stats", cwd=repo).stdout + cli("tasks", "--stats", cwd=repo).stderr
    assert "1 attempts; unknown for 1" in text
    assert "1,300 tokens (in 1,240, cached 400, out 60, reasoning 14)" in text


def test_a_failed_turn_with_no_usage_is_unknown_in_the_evidence(
    repo: Path, stubs: Any, cli: Any
) -> None:
    make_plan(repo)
    stubs.rule("codex", {"match": ["exec"], "stdout": stream(failed=True), "exit": 1})
    assert cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED).code == 6
    [attempt] = records(repo, "attempt")
    assert attempt["usage"] is None
    assert "tokens unknown" in (repo / "TASKS.md").read_text()


def test_the_agents_answer_is_still_the_o_file_not_the_event_stream(
    repo: Path, stubs: Any, cli: Any
) -> None:
    make_plan(repo)
    codex_edits(stubs, {"src/app.py": "fixed\n"}, message="From the -o file.")
    assert cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED).code == 0
    run = next((repo / ".git" / "plan-build").rglob("attempt-1.events.jsonl"))
    assert "turn.completed" in run.read_text()  # the stream is kept in the run folder
    assert stat.S_IMODE(run.stat().st_mode) == 0o600
    argv = dispatch_support.codex_runs(stubs)[0]["argv"]
    assert "--json" in argv  # the usage comes from the stream
    assert "-o" in argv  # the answer from the -o file, as before


# --- a review round with a stub Codex --------------------------------------------------------


@pytest.fixture
def project(repo: Path, private_home: Path, stubs: Any) -> Path:
    (repo.parent / "plan.md").write_text(PLAN)
    claude_session(private_home, repo)
    return repo


def round_record(wf: Path) -> dict[str, Any]:
    return json.loads((wf / "artifacts" / "plan-round-r1.json").read_text())


def test_a_review_round_keeps_codexs_usage_per_reviewer(
    project: Path, stubs: Any, cli: Any
) -> None:
    wf = reviewkit.start_plan_review(cli, stubs, project, CLEAN)
    used = round_record(wf)["reviewers"]["codex"]["usage_sum"]
    assert used == {
        "input": 10,
        "cached_input": 0,
        "cache_write_input": 0,
        "output": 5,
        "reasoning_output": 0,
        "total": 15,
        "runs": 1,
        "unknown_runs": 0,
    }
    status = cli("review.status", "--json", cwd=project)
    assert json.loads(status.stdout)["reviewers"]["codex"]["usage"] == used
    assert "reviewed · 15 tokens" in cli("review.status", cwd=project).stderr


def test_a_retried_review_counts_both_runs(project: Path, stubs: Any, cli: Any) -> None:
    stubs.rule("codex", codex_rule(CLEAN))
    not_a_review = {**codex_rule("I looked, it is fine."), "times": 1}
    stubs.rule("codex", not_a_review)
    r = cli("review.plan", "--plan", "../plan.md", cwd=project)
    assert r.code in (0, 6), r.stderr
    used = round_record(only_workflow(project))["reviewers"]["codex"]["usage_sum"]
    assert (used["total"], used["runs"], used["unknown_runs"]) == (30, 2, 0)


def test_a_review_stream_without_usage_is_unknown(project: Path, stubs: Any, cli: Any) -> None:
    bare = "".join(
        line(e)
        for e in (
            {"type": "thread.started", "thread_id": "t"},
            {"type": "turn.started"},
            {"type": "item.completed", "item": {"type": "agent_message", "text": CLEAN}},
            {"type": "turn.completed"},
        )
    )
    stubs.rule("codex", {"match": ["exec"], "write_flag": {"-o": CLEAN}, "stdout": bare})
    assert cli("review.plan", "--plan", "../plan.md", cwd=project).code in (0, 6)
    used = round_record(only_workflow(project))["reviewers"]["codex"]["usage_sum"]
    assert (used["total"], used["runs"], used["unknown_runs"]) == (None, 1, 1)
    assert cli("baseline", cwd=project).code == 0
    out = cli("status", cwd=project)
    assert "Codex clean (tokens unknown)" in out.stderr


def test_the_review_scan_reads_the_answer_and_the_failure() -> None:
    said = codex.scan(
        [
            {"type": "error", "message": "Reconnecting... 1/5"},
            {"type": "item.completed", "item": {"type": "agent_message", "text": "hi"}},
            {"type": "turn.failed", "error": {"message": "401 Unauthorized"}},
        ]
    )
    assert (said.failed, said.failure, said.message) == (True, "401 Unauthorized", "hi")
    assert not said.usage.known


# --- the report ------------------------------------------------------------------------------


def test_the_report_shows_numbers_where_codex_gave_them_and_unknown_elsewhere() -> None:
    story = stories.story(rounds=1, tasks=1)
    text = report_view.render(story, "md", report_view_templates())
    assert "| 1 | implement | checks\\_failed |" in text  # `_` escaped: GitHub shows checks_failed
    assert "1,540 tokens (in 1,200, cached 200, out 340, reasoning 40)" in text
    assert "| correct | unknown |" in text
    assert "| coderabbit | skipped |  | coderabbit is not installed | unknown |" in text
    empty = st.Story(**{**story.__dict__, "tokens": {}})
    assert "| (no Codex run) | unknown |" in report_view.render(
        empty, "md", report_view_templates()
    )


def report_view_templates() -> Path:
    return Path(__file__).resolve().parents[1] / "templates"


def test_a_resumed_dispatch_keeps_the_dead_processs_tokens_and_counts_the_killed_run(
    repo: Path, stubs: Any, cli: Any
) -> None:
    """Attempt 1 finishes (1,500 tokens), attempt 2 is killed with its dispatch before Codex
    printed anything; the resumed dispatch's attempt 3 reports 1,500. Its sum holds all three
    runs: the dead process's as it saved them, the killed one as unknown."""
    import signal
    import subprocess
    import time

    make_plan(repo)
    codex_edits(stubs, {"src/app.py": "not yet\n"}, times=1)
    stubs.rule("codex", {"match": ["exec"], "sleep": 60, "times": 1})
    rules = json.loads((stubs.home / "codex.json").read_text())  # attempt 1 edits, 2 hangs
    (stubs.home / "codex.json").write_text(json.dumps([rules[1], rules[0], *rules[2:]]))
    child = subprocess.Popen(
        [sys.executable, "-m", "plan_build", "dispatch", "TASK-002"],
        cwd=repo,
        env=dict(os.environ, **DEGRADED),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 30
    while len(dispatch_support.codex_runs(stubs)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    child.send_signal(signal.SIGKILL)
    child.wait(10)
    codex_edits(stubs, {"src/app.py": "fixed\n"})

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    assert r.code == 0, r.stderr
    assert "resuming dispatch" in r.stderr
    [summary] = [d for d in records(repo, "dispatch") if d["outcome"] == "Review"]
    used = summary["usage_sum"]
    assert (used["total"], used["runs"], used["unknown_runs"]) == (3000, 3, 1)
    assert cli("baseline", cwd=repo).code == 0
    [task] = json.loads(cli("status", "--json", cwd=repo).stdout)["tasks"]["usage"]
    assert (task["task"], task["total"], task["unknown_runs"]) == ("TASK-002", 3000, 1)
