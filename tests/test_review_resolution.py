"""Which workflow a command acts on, which plan a new workflow starts from, and the
fingerprint that leaves the review state out."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import pytest

from plan_build.core import gitrepo, snapshot
from plan_build.core.claudesessions import ClaudeSession
from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.review.layout import WorkflowDir
from plan_build.review.plans import native_plan, source_path
from plan_build.review.resolution import resolve
from plan_build.review.runtime import fingerprint
from plan_build.review.workflowfile import create, save
from tests.support.reviewkit import OTHER_SESSION, SESSION_ID, claude_session

NOW = dt.datetime(2026, 11, 30, 12, 0, 0, tzinfo=dt.UTC)


def session(sid: str = SESSION_ID, cwd: str = "/home/ana/src/shop") -> ClaudeSession:
    return ClaudeSession(os.getpid(), sid, cwd, Path("/dev/null"), "process tree")


def add(root: Path, wf_id: str, owner: str = "", status: str = "active") -> None:
    wdir = WorkflowDir(root, wf_id)
    wf = create(wdir, NOW, "")
    wf.owner_session_id, wf.status = owner, status
    save(wdir, wf, NOW)


def env(home: Path) -> dict[str, str]:
    return {"HOME": str(home)}


def test_the_sessions_own_workflow_wins(tmp_path: Path, private_home: Path) -> None:
    add(tmp_path, "w-mine", SESSION_ID)
    add(tmp_path, "w-theirs", OTHER_SESSION)
    add(tmp_path, "w-done", SESSION_ID, status="completed")
    res = resolve(tmp_path, session(), env(private_home))
    assert res.workflow is not None
    assert res.workflow.id == "w-mine"
    assert not res.claim


def test_a_single_unowned_workflow_is_claimed(tmp_path: Path, private_home: Path) -> None:
    add(tmp_path, "w-free")
    add(tmp_path, "w-theirs", OTHER_SESSION)
    res = resolve(tmp_path, session(), env(private_home))
    assert res.workflow is not None
    assert (res.workflow.id, res.claim) == ("w-free", True)


@pytest.mark.parametrize(
    ("owners", "message"),
    [
        (
            (SESSION_ID, SESSION_ID),
            f"Claude session {SESSION_ID} owns several active workflows: w1, w2",
        ),
        (("", ""), "several unowned active workflows could be this session's: w1, w2"),
    ],
)
def test_conflicts_are_errors_naming_the_ids(
    tmp_path: Path, private_home: Path, owners: tuple[str, str], message: str
) -> None:
    add(tmp_path, "w1", owners[0])
    add(tmp_path, "w2", owners[1])
    with pytest.raises(PlanBuildError) as err:
        resolve(tmp_path, session(), env(private_home))
    assert err.value.code == ExitCode.USAGE
    assert message in str(err.value)


def test_other_sessions_workflows_are_invisible_and_ended_ones_are_named(
    tmp_path: Path, private_home: Path
) -> None:
    add(tmp_path, "w-theirs", OTHER_SESSION)
    res = resolve(tmp_path, session(), env(private_home))
    assert res.workflow is None
    assert res.orphans == ("w-theirs",)  # no live session file says OTHER_SESSION
    claude_session(private_home, tmp_path, sid=OTHER_SESSION)
    assert resolve(tmp_path, session(), env(private_home)).orphans == ()


def test_an_explicit_id_takes_over_only_from_an_ended_session(
    tmp_path: Path, private_home: Path
) -> None:
    add(tmp_path, "w-theirs", OTHER_SESSION)
    res = resolve(tmp_path, session(), env(private_home), "w-theirs")
    assert res.claim
    assert "taking over workflow w-theirs from ended session" in (res.note or "")
    claude_session(private_home, tmp_path, sid=OTHER_SESSION)
    res = resolve(tmp_path, session(), env(private_home), "w-theirs")
    assert not res.claim
    assert "acting on it once because --workflow named it" in (res.note or "")


def test_without_a_session_one_active_workflow_is_used(tmp_path: Path, private_home: Path) -> None:
    add(tmp_path, "w1", OTHER_SESSION)
    add(tmp_path, "w0", status="completed")
    res = resolve(tmp_path, None, env(private_home))
    assert res.workflow is not None
    assert (res.workflow.id, res.claim) == ("w1", False)


def write_transcript(home: Path, cwd: str, lines: list[dict]) -> None:
    key = "".join(c if c.isalnum() else "-" for c in cwd)
    path = home / ".claude" / "projects" / key / f"{SESSION_ID}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


def test_structured_plan_writes_beat_later_mentions_and_other_files(private_home: Path) -> None:
    plans = private_home / ".claude" / "plans"
    plans.mkdir(parents=True)
    written, mentioned = plans / "written.md", plans / "mentioned.md"
    written.write_text("# written\n")
    mentioned.write_text("# mentioned\n")
    write_transcript(
        private_home,
        "/home/ana/src/shop",
        [
            {"timestamp": "2026-11-30T10:00:00Z", "toolUseResult": {"filePath": str(written)}},
            {
                "timestamp": "2026-11-30T10:05:00Z",
                "message": {
                    "content": [
                        {
                            "type": "tool_use",
                            "name": "Write",
                            "input": {"file_path": "/home/ana/src/shop/README.md"},
                        }
                    ]
                },
            },
            {
                "timestamp": "2026-11-30T10:09:00Z",
                "message": {"content": "~/.claude/plans/mentioned.md"},
            },
        ],
    )
    assert native_plan(env(private_home), session()) == written


def test_text_mentions_count_when_nothing_structured_does(private_home: Path) -> None:
    plans = private_home / ".claude" / "plans"
    plans.mkdir(parents=True)
    (plans / "a-plan.md").write_text("# plan\n")
    (plans / "x-agent-y.md").write_text("# agent\n")
    write_transcript(
        private_home,
        "/home/ana/src/shop",
        [
            {"message": {"content": "saved to .claude/plans/a-plan.md"}},
            {"message": {"content": "and .claude/plans/x-agent-y.md"}},
        ],
    )
    assert native_plan(env(private_home), session()) == plans / "a-plan.md"


def test_relative_plan_paths_are_recorded_relative_to_the_project(tmp_path: Path) -> None:
    root = tmp_path / "shop"
    (root / "docs").mkdir(parents=True)
    assert source_path("plan.md", root / "docs", root) == (
        root / "docs" / "plan.md",
        "docs/plan.md",
    )
    assert source_path("../x.md", root, root) == (tmp_path / "x.md", str(tmp_path / "x.md"))


def test_the_fingerprint_leaves_review_state_out_but_sees_everything_else(repo: Path) -> None:
    r = gitrepo.discover(repo)
    before = fingerprint(r, repo)
    wf_dir = repo / ".claude" / "codex-review" / "workflows" / "w1"
    wf_dir.mkdir(parents=True)
    (wf_dir / "workflow.json").write_text("{}")
    assert fingerprint(r, repo) == before
    (repo / ".claude" / "settings.json").write_text("{}")
    assert fingerprint(r, repo) != before
    # every snapshot leaves plan-build's own state out, so baselines and commits agree with it
    assert snapshot.worktree_tree(r) == fingerprint(r, repo)
    assert snapshot.worktree_tree(r, exclude=()) != fingerprint(r, repo)


def test_committed_review_state_is_left_out_too(repo: Path) -> None:
    from tests.support.gitcmd import git

    r = gitrepo.discover(repo)
    state = repo / ".claude" / "codex-review" / "workflows" / "w1" / "workflow.json"
    state.parent.mkdir(parents=True)
    state.write_text("{}")
    git(repo, "add", ".claude")
    git(repo, "commit", "-q", "-m", "track review state")
    before = fingerprint(r, repo)
    state.write_text('{"round": 2}')
    assert fingerprint(r, repo) == before
    assert ".claude" not in r.git("ls-tree", "--name-only", before).stdout


def test_a_projects_plans_directory_setting_is_honoured(private_home: Path, tmp_path: Path) -> None:
    project = tmp_path / "shop"
    (project / ".claude").mkdir(parents=True)
    (project / ".claude" / "settings.json").write_text('{"plansDirectory": "docs/plans"}')
    plan = project / "docs" / "plans" / "paginate.md"
    plan.parent.mkdir(parents=True)
    plan.write_text("# in-project plan\n")
    outside = project / "docs" / "notes.md"
    outside.write_text("# not a plan\n")
    write_transcript(
        private_home,
        str(project),
        [
            {"timestamp": "2026-11-30T10:00:00Z", "toolUseResult": {"filePath": str(plan)}},
            {"timestamp": "2026-11-30T10:01:00Z", "toolUseResult": {"filePath": str(outside)}},
        ],
    )
    assert native_plan(env(private_home), session(cwd=str(project))) == plan
