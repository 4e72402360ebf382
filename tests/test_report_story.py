"""The report's story read from a real session's records: a scripted architect session (stub
Codex and CodeRabbit on PATH, real git) through a plan round with findings, its decisions,
a dispatch, a clean implementation review, verify and the commit; then its records archived
as `architect --new` does, and the session still reported."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from plan_build.core import gitrepo
from plan_build.core.ui import Console
from plan_build.delivery import baseline
from plan_build.delivery import commit as commit_mod
from plan_build.views import report as view
from plan_build.views import storyread
from tests.support.dispatching import codex_edits, commit_records, make_plan
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


def test_a_whole_session_is_told_in_order_and_still_after_its_records_are_archived(
    repo: Path, private_home: Path, stubs: Stubs, cli
) -> None:
    make_plan(repo)
    commit_records(repo)
    (repo.parent / "plan.md").write_text(PLAN)
    claude_session(private_home, repo)
    r = gitrepo.discover(repo)
    baseline.capture(r, session_id="s1", mode="architect")

    wf = start_plan_review(cli, stubs, repo)
    decide(
        wf, "plan", 1, "### HIGH-1\nDecision: ACCEPT\n\n### LOW-1\nDecision: REJECT - not ours\n"
    )
    assert cli("review.approve", cwd=repo).code == 0
    codex_edits(stubs, {"src/app.py": "fixed\n", "tests/test_page.py": "def test(): pass\n"})
    env = {"PLAN_BUILD_MEMORY_MODE": "degraded"}
    assert cli("dispatch", "TASK-002", cwd=repo, env=env).code == 0
    stubs.rule("codex", codex_rule(CLEAN))
    for rule in reversed(rabbit_agent(rabbit_complete())):
        stubs.rule("coderabbit", rule)
    assert cli("review", cwd=repo).code == 0
    assert cli("review.approve", cwd=repo).code == 0
    before_verify = storyread.gather(r, dict(os.environ), repo, "s1")
    assert before_verify.outcome == "missing: verify has not run on this change"
    assert cli("verify", cwd=repo).code == 0
    assert storyread.gather(r, dict(os.environ), repo, "s1").outcome == "ready to commit"
    out = commit_mod.run(
        r,
        baseline.current(r, {}),
        ui=ScriptedInteraction(["y"]),
        console=Console(fancy=False),
        env={**os.environ},
        message="Paginate the audit log",
        parents=lambda: [],
    )

    s = storyread.gather(r, dict(os.environ), repo, "s1")
    assert s.outcome == f"committed as {out.commit[:12]}"
    kinds = [e.kind for e in s.events]
    assert kinds[0] == "baseline"
    assert kinds[-1] == "commit"
    # records stamp whole seconds, so events of one second may come in any order among them
    assert [e.at for e in s.events] == sorted(e.at for e in s.events)
    assert sorted(kinds) == [
        "baseline",
        "commit",
        "decisions",
        "dispatch",
        "review",
        "review",
        "verify",
    ]
    dispatch = next(e for e in s.events if e.kind == "dispatch")
    assert dispatch.seconds is not None  # the attempt's Codex run, drawn from its start
    assert [(x.phase, x.round) for x in s.rounds] == [("plan", 1), ("implement", 1)]
    plan = s.rounds[0]
    assert [(f.id, f.decision, f.outcome) for f in plan.findings] == [
        ("HIGH-1", "ACCEPT", "FIX"),
        ("LOW-1", "REJECT", "NO-CHANGE"),
    ]
    assert plan.findings[1].reason == "not ours"
    assert plan.approved_at is not None
    assert {rv.name: rv.result for rv in s.rounds[1].reviewers} == {
        "codex": "clean",
        "coderabbit": "clean",
    }
    (task,) = s.tasks
    assert (task.id, task.title, task.outcome) == ("TASK-002", "Paginate the audit log", "Review")
    assert task.scope
    assert task.evidence is not None
    assert task.attempts[0].checks  # the task's verification commands ran
    # the dispatch's tokens as the stub Codex reported them; the review rounds' beside them
    assert s.tokens["implementer"].usage.total == 1500
    assert task.attempts[0].usage.cached_input == 200
    assert "reviewer (review rounds)" in s.tokens
    assert s.verify is not None
    assert s.verify.ok
    assert {f.path for f in s.files} == {"src/app.py", "tests/test_page.py", "TASKS.md"}
    assert not s.archived

    # `architect --new` moves the records into docs/archive/<stamp>/: the story still holds
    archive = repo / "docs" / "archive" / "20261203T120000Z"
    archive.mkdir(parents=True)
    shutil.move(repo / "TASKS.md", archive / "TASKS.md")
    s2 = storyread.gather(r, dict(os.environ), repo, "s1")
    assert s2.archived
    assert s2.tasks[0].title == "Paginate the audit log"
    page = view.render(
        view.redacted(s2, dict(os.environ), [(str(private_home), "~")]), "html", ROOT / "templates"
    )
    assert "its architect records are archived" in page
    assert page.count('<g class="event"') == len(s2.events)
    assert str(private_home) not in page
