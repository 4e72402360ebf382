"""`plan-build status`: where the session stands, on one screen, at every stage of a session.

A scripted architect session (stub Codex and CodeRabbit on PATH, real git): the baseline, a plan
round with findings, the decisions, the approval, a dispatch, the implementation review, a
stale approval, verify and the commit. At each stage the screen fits 30 lines of 100 columns
and says what is missing before `commit` and the one command to run next; `--json` gives the
same facts with every key the manual documents, and no other.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from plan_build.core import gitrepo
from plan_build.core.ui import Console
from plan_build.delivery import baseline
from plan_build.delivery import commit as commit_mod
from plan_build.views import status as view
from tests.support.dispatching import codex_edits, commit_records, make_plan
from tests.support.gitcmd import git
from tests.support.interaction import ScriptedInteraction
from tests.support.paths import ROOT
from tests.support.reviewkit import (
    CLEAN,
    PLAN,
    claude_session,
    codex_rule,
    decide,
    rabbit_agent,
    rabbit_complete,
    start_plan_review,
)
from tests.support.stubs import Stubs

DEGRADED = {"PLAN_BUILD_MEMORY_MODE": "degraded"}
NO_MEMORY = "memory.server: no AgentMemory server answers at http://127.0.0.1:9 (refused)"
MANUAL = ROOT / "docs" / "USER_MANUAL.md"


# --- the documented schema ---------------------------------------------------------------


def documented() -> dict[str, str]:
    """`path -> type` from the manual's table of `status --json` keys."""
    text = MANUAL.read_text()
    table = text.split("<!-- status-json begin -->")[1].split("<!-- status-json end -->")[0]
    keys: dict[str, str] = {}
    for row in table.splitlines():
        m = re.match(r"\|\s*`([^`]+)`\s*\|\s*([^|]+?)\s*\|", row)
        if not m:
            continue
        path, kind = m.groups()
        brace = re.search(r"\{([^}]+)\}", path)
        names = brace.group(1).split(",") if brace else [""]
        for name in names:
            full = path.replace(brace.group(0), name) if brace else path
            keys[full] = kind
    return keys


TYPES = {"string": str, "integer": int, "boolean": bool, "object": dict}


def conforms(value: Any, path: str, keys: dict[str, str]) -> None:
    """`value` at `path` has the documented type, and an object exactly its documented keys."""
    kind = keys[path] if path else "object"
    nullable = kind.endswith(" or null")
    base = kind.removesuffix(" or null")
    if value is None:
        assert nullable, f"{path} is null but documented as {kind}"
        return
    if base.startswith("list of "):
        assert isinstance(value, list), f"{path}: {value!r} is not a list"
        item = base.removeprefix("list of ").removesuffix("s")
        for v in value:
            if item == "object":
                conforms(v, path + "[]", {**keys, path + "[]": "object"})
            else:
                assert isinstance(v, TYPES[item]), f"{path}[]: {v!r} is not {item}"
        return
    want = TYPES[base]
    assert isinstance(value, want), f"{path}: {value!r} is not {base}"
    assert not (want is int and isinstance(value, bool)), f"{path}: {value!r} is a boolean"
    if want is dict:
        prefix = f"{path}." if path else ""
        children = {k[len(prefix) :] for k in keys if k.startswith(prefix) and k != path}
        direct = {c for c in children if "." not in c and not c.startswith("[]")}
        assert set(value) == direct, f"{path or 'top level'}: keys differ from the manual"
        for k, v in value.items():
            conforms(v, prefix + k, keys)


# --- the session ---------------------------------------------------------------------------


@pytest.fixture
def shop(repo: Path, private_home: Path, stubs: Stubs) -> Path:
    """An architect session launched in degraded memory mode: TASKS.md, SPEC.md, an identity."""
    make_plan(repo)
    commit_records(repo)
    (repo.parent / "plan.md").write_text(PLAN)
    claude_session(private_home, repo)
    baseline.capture(
        gitrepo.discover(repo),
        session_id="s1",
        mode="architect",
        memory_mode="degraded",
        memory_reason=NO_MEMORY,
    )
    return repo


def screen(repo: Path) -> tuple[str, dict[str, Any]]:
    """What `status` shows (as a person at a terminal reads it) and what `status --json` says."""
    env = dict(os.environ)
    facts = view.gather(gitrepo.discover(repo, env), env, repo)
    lines = view.lines(facts, f"next: {facts.next}")
    assert len(lines) <= view.MAX_LINES, lines
    assert all(len(line) <= view.WIDTH for line in lines), lines
    data = view.as_json(facts)
    conforms(data, "", documented())
    return "\n".join(lines), data


def test_a_session_seen_at_every_stage(shop: Path, stubs: Stubs, cli) -> None:
    # 1. just the baseline
    text, data = screen(shop)
    assert text.splitlines()[0].startswith("session s1 · architect · started ")
    assert "repository github.com/ana/shop · memory degraded (memory.server: no AgentMemory" in text
    assert "no intended change yet" in text
    assert "review: none (no review workflow for this change)" in text
    assert "tasks: 3 · 2 pending, 1 complete" in text
    assert "verify: not run yet" in text
    assert "missing before commit: there is no intended change yet" in text
    assert data["session_header"]["memory"] == {
        "mode": "degraded",
        "reason": NO_MEMORY,
        "source": "baseline",
    }
    assert data["review"]["workflow"] is None
    assert data["ready"] is False
    assert data["next"] == "plan-build review.plan"

    # 2. a plan round with findings
    wf = start_plan_review(cli, stubs, shop)
    text, data = screen(shop)
    assert f"review: workflow {wf.name} · plan round 1 · active · step review" in text
    assert "  reviewers: Codex findings (15 tokens)" in text  # as the stub Codex reported
    assert "  findings: 2 · open: 1 high, 1 low" in text
    assert "  decisions missing: HIGH-1, LOW-1" in text
    assert "the plan review is not approved" in text
    assert data["review"]["open"] == {"critical": 0, "high": 1, "medium": 0, "low": 1}
    assert data["review"]["reviewers"] == [
        {
            "name": "codex",
            "result": "findings",
            "round": 1,
            "reason": None,
            "usage": {
                "input": 10,
                "cached_input": 0,
                "cache_write_input": 0,
                "output": 5,
                "reasoning_output": 0,
                "total": 15,
                "runs": 1,
                "unknown_runs": 0,
            },
        }
    ]
    assert data["next"].startswith("write 'Decision: ACCEPT | REJECT | DEFER' under each finding")
    assert "plan-findings-r1.md" in data["next"]

    # 3. the decisions are written: the round can be approved
    decide(wf, "plan", 1, "### HIGH-1\nDecision: ACCEPT\n\n### LOW-1\nDecision: REJECT\n")
    text, data = screen(shop)
    assert "step approval" in text
    assert "decisions missing" not in text
    assert "open: none" in text
    assert data["review"]["missing_decisions"] == []
    assert data["next"] == "plan-build review.approve"
    assert cli("review.approve", cwd=shop).code == 0
    text, data = screen(shop)
    assert "implementation round 1 · active · step working" in text
    assert data["next"] == "plan-build review"

    # 4. Codex carries out TASK-002
    codex_edits(stubs, {"src/app.py": "fixed\n", "tests/test_page.py": "def test(): pass\n"})
    assert cli("dispatch", "TASK-002", cwd=shop, env=DEGRADED).code == 0
    text, data = screen(shop)
    assert "intended change: 3 files" in text
    assert "  M  src/app.py  +1 −2" in text
    assert "  A  tests/test_page.py  +1 −0" in text
    assert "tasks: 3 · 1 pending, 1 review, 1 complete" in text
    assert "  last dispatch: TASK-002 → Review" in text
    assert data["tasks"]["last_dispatch"]["task"] == "TASK-002"
    # the dispatch's tokens as the stub Codex reported them (1,200 in, 300 out)
    assert "  tokens (last dispatch): TASK-002 1,500 tokens" in text
    [used] = data["tasks"]["usage"]
    assert (used["task"], used["total"], used["cached_input"], used["runs"]) == (
        "TASK-002",
        1500,
        200,
        1,
    )
    assert data["missing"] == [  # in commit's order: verification, then review
        "verify has not run on this change",
        "the implementation review is not approved",
    ]
    assert data["next"] == "plan-build review"

    # 5. the implementation review is clean and approved, for this change
    stubs.rule("codex", codex_rule(CLEAN))
    for rule in reversed(rabbit_agent(rabbit_complete())):
        stubs.rule("coderabbit", rule)
    assert cli("review", cwd=shop).code == 0
    assert cli("review.approve", cwd=shop).code == 0
    text, data = screen(shop)
    assert "implementation round 1 · completed" in text
    assert "  reviewers: Codex clean (15 tokens) · CodeRabbit clean" in text
    assert "  approval: fresh · " in text
    assert data["review"]["approval"]["state"] == "fresh"
    assert data["missing"] == ["verify has not run on this change"]
    assert data["next"] == "plan-build verify"

    # 6. an edit after the approval makes it stale; undoing the edit makes it hold again
    app = shop / "src" / "app.py"
    app.write_text("fixed\nand more\n")
    text, data = screen(shop)
    assert "  approval: stale · " in text
    # (listed after verify, in commit's order: the screen wraps it, the JSON says it whole)
    assert (
        "the implementation review's approval is stale (the change moved since)"
        in (data["missing"])
    )
    assert "approval is stale (the change moved since)" in " ".join(text.split())
    assert data["review"]["approval"]["state"] == "stale"
    assert data["next"] == "plan-build review.plan"
    app.write_text("fixed\n")
    assert screen(shop)[1]["review"]["approval"]["state"] == "fresh"

    # 7. verify passes for this change
    r = cli("verify", cwd=shop)
    assert r.code == 0, r.stderr
    text, data = screen(shop)
    assert re.search(r"verify: passed at \S+ \S+ UTC · current", text)
    assert "ready to commit: review and verification hold for this change" in text
    assert text.splitlines()[-1] == "next: plan-build commit"
    assert data["ready"] is True
    assert data["missing"] == []
    app.write_text("fixed\nagain\n")  # a change after verify: verify is stale (and review)
    text, data = screen(shop)
    assert "· stale (the change moved since)" in text
    assert "verify ran on an earlier state of the change" in data["missing"]
    app.write_text("fixed\n")

    # 8. the commit
    r = gitrepo.discover(shop)
    out = commit_mod.run(
        r,
        baseline.current(r, {}),
        ui=ScriptedInteraction(["y"]),
        console=Console(fancy=False),
        env={**os.environ},
        message="Paginate the audit log",
        parents=lambda: [],
    )
    text, data = screen(shop)
    assert f"committed as {out.commit[:12]}" in text
    assert "committed change: 3 files" in text
    assert "nothing pending: the session is committed" in text
    assert data["committed"] == out.commit
    assert data["ready"] is False
    assert data["missing"] == []
    assert data["next"].startswith("plan-build plan")
    assert git(shop, "rev-parse", "HEAD").strip() == out.commit


def test_status_from_the_command_line_is_read_only(shop: Path, stubs: Stubs, cli) -> None:
    """No record, workflow file, index or work-tree file changes. What `status` may write is
    what taking the work tree always wrote: git objects (content-addressed, so an existing one
    is only touched), its kept index (issue 15, ADR 0131) and the file list it read between
    two trees (ADR 0200)."""
    wf = start_plan_review(cli, stubs, shop)
    decide(wf, "plan", 1, "### HIGH-1\nDecision: ACCEPT\n")  # the ledger is behind: not synced
    (shop / "src" / "app.py").write_text("fixed\n")
    kept = shop / ".git" / "plan-build" / "sessions" / "s1" / "status-index"
    objects = shop / ".git" / "objects"
    diffs = shop / ".git" / "plan-build" / "cache" / "treediff"

    def files() -> dict[Path, tuple[bytes, int]]:
        return {
            p: (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(shop.rglob("*"))
            if p.is_file() and kept not in p.parents
        }

    before = files()
    assert cli("status", cwd=shop).code == 0
    r = cli("status", "--json", cwd=shop)
    assert r.code == 0, r.stderr
    assert json.loads(r.stdout)["review"]["workflow"] == wf.name
    assert "review: workflow" in r.stderr
    shown = r.stderr.splitlines()
    assert len(shown) <= 30
    assert max(len(line) for line in shown) <= 100
    after = files()
    for path, (data, mtime) in before.items():
        assert after[path][0] == data, path
        assert objects in path.parents or after[path][1] == mtime, path
    assert all(objects in p.parents or p.parent == diffs for p in set(after) - set(before))


def test_a_skipped_reviewer_is_never_shown_clean(shop: Path, stubs: Stubs, cli) -> None:
    start_plan_review(cli, stubs, shop, CLEAN)
    assert cli("review.approve", cwd=shop).code == 0
    (shop / "src" / "app.py").write_text("fixed\n")
    stubs.rule("codex", codex_rule(CLEAN))
    error = {"type": "error", "errorType": "rate_limit", "message": "Rate limit exceeded"}
    for rule in reversed(rabbit_agent(error, exit=1)):
        stubs.rule("coderabbit", rule)
    assert cli("review", cwd=shop).code == 6

    text, data = screen(shop)
    assert "Codex clean (15 tokens) · CodeRabbit skipped (rate limited" in text
    rabbit = next(r for r in data["review"]["reviewers"] if r["name"] == "coderabbit")
    assert rabbit["result"] == "skipped"
    assert data["review"]["waivable"]  # only the user may approve past it
    assert data["next"] == f"plan-build review.approve --workflow {data['review']['workflow']}"


def test_the_task_in_progress_and_its_attempt(shop: Path) -> None:
    from plan_build.dispatch import taskstate

    tasks_md = shop / "TASKS.md"
    tasks_md.write_text(tasks_md.read_text().replace("Status: Pending", "Status: In Progress", 1))
    r = gitrepo.discover(shop)
    taskstate.start_running(r, "TASK-002", "d1", "0" * 40, "2026-12-03T10:00:00Z")
    first = {"input": 1200, "output": 300, "total": 1500, "runs": 1, "unknown_runs": 0}
    taskstate.save_running(
        r, "TASK-002", attempts=2, role="correction", pid=2**22 + 7, usage_sum=first
    )
    text, data = screen(shop)
    assert (
        "  in progress: TASK-002 Paginate the audit log · attempt 2 (correction)"
        " · 1,500 tokens so far" in text
    )
    assert "  its dispatch is not running: plan-build dispatch TASK-002 resumes it" in text
    assert data["next"] == "plan-build dispatch TASK-002 (resumes it)"
    assert data["tasks"]["in_progress"] == {
        "id": "TASK-002",
        "wave": False,
        "all": ["TASK-002"],
        "title": "Paginate the audit log",
        "attempt": 2,
        "role": "correction",
        "running": False,
        "usage": {
            "input": 1200,
            "cached_input": None,  # not in the record: unknown
            "cache_write_input": None,
            "output": 300,
            "reasoning_output": None,
            "total": 1500,
            "runs": 1,
            "unknown_runs": 0,
        },
    }
    taskstate.save_running(r, "TASK-002", pid=os.getpid())  # a live dispatch: wait for it
    text, data = screen(shop)
    assert "its dispatch is not running" not in text
    assert data["tasks"]["in_progress"]["running"] is True
    assert data["next"] == "wait for the dispatch of TASK-002 to end"


def test_a_long_change_is_cut_and_the_screen_still_fits(shop: Path) -> None:
    for i in range(60):
        (shop / f"file_{i:02d}_with_a_rather_long_name_{'x' * 60}.txt").write_text("x\n")
    text, data = screen(shop)
    assert "intended change: 60 files, +60 −0" in text
    assert re.search(r"  … and \d+ more", text)
    assert data["change"]["count"] == 60
    assert len(data["change"]["files"]) == 60  # the JSON is never cut


def test_no_session_is_one_clear_error(repo: Path, cli) -> None:
    r = cli("status", cwd=repo)
    assert r.code == 2
    assert "no session baseline for the worktree at" in r.stderr
    assert "plan-build baseline" in r.stderr


@pytest.fixture
def standard(repo: Path) -> Path:
    baseline.capture(gitrepo.discover(repo), session_id="s2", mode="standard")
    return repo


def test_a_failed_verify_is_named_and_verify_is_next(standard: Path, cli) -> None:
    (standard / "notes.txt").write_text("trailing space \n")
    assert cli("verify", cwd=standard).code == 6
    text, data = screen(standard)
    assert "verify: failed: diff.check at " in text
    assert "verification failed (diff.check)" in data["missing"]
    assert data["verify"]["failed"] == ["diff.check"]
    assert data["verify"]["stale"] is False
    assert data["next"] == "plan-build verify"


def test_head_moved_since_the_baseline_is_missing_first(standard: Path) -> None:
    before = git(standard, "rev-parse", "HEAD").strip()
    (standard / "app.py").write_text("x = 1\n")
    git(standard, "add", "app.py")
    git(standard, "commit", "-qm", "by hand")
    text, data = screen(standard)
    assert "  warning: HEAD moved since the baseline (now " in text
    assert data["missing"][0] == "HEAD moved since the baseline"
    assert data["next"] == f"git reset --soft {before} (or commit by hand)"


def test_a_damaged_workflow_is_one_line_and_the_rest_still_shows(standard: Path) -> None:
    broken = standard / ".claude" / "codex-review" / "workflows" / "20261203-100000-abcdef"
    broken.mkdir(parents=True)
    (broken / "workflow.json").write_text("{not json")
    (standard / "app.py").write_text("x = 1\n")
    text, data = screen(standard)
    assert "intended change: 1 file, +1 −0" in text
    assert data["review"]["workflow"] is None
    # the only workflow folder is broken: commit would stop on it, so status says so and
    # gives the fix as the next step (docs/review.md, difference 19)
    assert "review: cannot be read: workflow folder 20261203-100000-abcdef is broken" in text
    assert data["missing"] == [  # in commit's order: verification, then review
        "verify has not run on this change",
        "the review state cannot be read (workflow folder 20261203-100000-abcdef is broken)",
    ]
    assert "broken-workflows" in data["next"]
    assert "verify: not run yet" in text


def test_inside_claude_the_commit_is_put_as_a_request_to_the_user(standard: Path) -> None:
    (standard / "app.py").write_text("x = 1\n")
    r = gitrepo.discover(standard)
    facts = view.gather(r, dict(os.environ), standard)
    facts = dataclasses.replace(facts, next="plan-build commit")
    assert view.next_line(facts, {"CLAUDECODE": "1"}).startswith(
        "next: ask the user to run plan-build commit"
    )


def test_the_schema_check_catches_a_missing_an_extra_and_a_mistyped_key(standard: Path) -> None:
    _, data = screen(standard)
    keys = documented()
    for broken in (
        {k: v for k, v in data.items() if k != "ready"},
        {**data, "surprise": 1},
        {**data, "ready": "yes"},
        {**data, "verify": {**data["verify"], "ran": None}},
    ):
        with pytest.raises(AssertionError):
            conforms(broken, "", keys)


def test_two_active_workflows_without_a_session_are_named_not_guessed(standard: Path) -> None:
    from plan_build.review.layout import WorkflowDir
    from plan_build.review.workflowfile import create, save

    now = dt.datetime(2026, 12, 3, 10, 0, tzinfo=dt.UTC)
    for wf_id in ("20261203-100000-aaaaaa", "20261203-100001-bbbbbb"):
        wdir = WorkflowDir(standard, wf_id)
        wdir.artifacts.mkdir(parents=True)
        save(wdir, create(wdir, now, "bench"), now)
    (standard / "app.py").write_text("x = 1\n")
    text, data = screen(standard)
    assert "review: cannot be read: multiple active workflows found: 20261203-100000-aaaaaa" in text
    assert data["missing"][0] == "verify has not run on this change"  # commit's order
    assert data["missing"][1].startswith("the review state cannot be read")
    assert data["next"].startswith("name the one to act on with --workflow ID")
