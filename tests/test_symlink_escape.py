"""A repository's content never steers plan-build's writes (or its reads of another project's
workflow) outside it: a symlinked `.claude/`, workflow directory, record or TASKS.md is refused
with a message naming the link, and nothing is written where the link points."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from plan_build.core import fsutil, gitrepo
from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.startup import architectrecords, identity
from tests.support.dispatching import codex_edits, make_plan
from tests.support.gitcmd import git
from tests.support.reviewkit import CLEAN, codex_rule, only_workflow, tree_bytes

DEGRADED = {"PLAN_BUILD_MEMORY_MODE": "degraded"}


def listing(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    path = tmp_path / "outside"
    path.mkdir()
    return path


def test_a_symlinked_claude_dir_stops_review_plan_before_anything_is_written(
    repo: Path, stubs, cli, outside: Path
) -> None:
    (repo.parent / "plan.md").write_text("# Plan\n")
    (repo / ".claude").symlink_to(outside)
    git(repo, "add", ".claude")
    git(repo, "commit", "-qm", "the clone's .claude is a link")
    stubs.rule("codex", codex_rule(CLEAN))

    r = cli("review.plan", "--plan", "../plan.md", cwd=repo)

    assert r.code == ExitCode.BLOCKED, r.stderr
    assert f"{repo / '.claude'} is a symbolic link to {outside}, outside the repository" in (
        r.stderr
    )
    assert f"rm {repo / '.claude'}" in r.stderr
    assert listing(outside) == []
    assert not stubs.calls("codex")


def test_a_workflow_dir_linked_to_another_project_is_not_marked_done(
    repo: Path, stubs, cli, tmp_path: Path
) -> None:
    (repo.parent / "plan.md").write_text("# Plan\n")
    stubs.rule("codex", codex_rule(CLEAN))
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    assert cli("review.plan", "--plan", "../plan.md", cwd=other).code == 0
    theirs = only_workflow(other)
    before = tree_bytes(other)
    mine = repo / ".claude" / "codex-review" / "workflows"
    mine.mkdir(parents=True)
    (mine / theirs.name).symlink_to(theirs)

    r = cli("review.done", cwd=repo)

    # The linked folder is never read or written through; it is this repository's only
    # workflow folder, so the command stops naming the link and how to remove it.
    assert r.code == ExitCode.PREFLIGHT, r.stderr
    assert f"workflow folder {theirs.name} is broken" in r.stderr
    assert f"{mine / theirs.name} is a symbolic link to {theirs}" in r.stderr
    assert (
        f"fix: remove the link (or replace it with a real directory): rm {mine / theirs.name}"
        in r.stderr
    )
    assert tree_bytes(other) == before
    assert json.loads((theirs / "workflow.json").read_text())["status"] == "active"
    status = cli("review.status", "--json", cwd=repo)
    assert status.code == 0  # read-only commands answer, without reading through the link
    assert json.loads(status.stdout)["workflow"] is None


def test_a_symlinked_artifacts_dir_is_refused(repo: Path, stubs, cli, outside: Path) -> None:
    (repo.parent / "plan.md").write_text("# Plan\n")
    stubs.rule("codex", codex_rule(CLEAN))
    assert cli("review.plan", "--plan", "../plan.md", cwd=repo).code == 0
    wf = only_workflow(repo)
    for entry in (wf / "artifacts").iterdir():
        entry.unlink()
    (wf / "artifacts").rmdir()
    (wf / "artifacts").symlink_to(outside)

    r = cli("review.repeat", cwd=repo)

    assert r.code == ExitCode.PREFLIGHT, r.stderr  # never read through; stops, naming the link
    assert f"{wf / 'artifacts'} is a symbolic link to {outside}" in r.stderr
    assert f"rm {wf / 'artifacts'}" in r.stderr
    assert listing(outside) == []


def test_a_link_into_git_is_refused_and_links_inside_are_followed(repo: Path) -> None:
    (repo / "real").mkdir()
    (repo / "inner").symlink_to(repo / "real")
    assert fsutil.confine(repo / "inner" / "x", repo) == repo / "inner" / "x"
    (repo / "sneaky").symlink_to(repo / ".git")
    with pytest.raises(PlanBuildError) as err:
        fsutil.confine(repo / "sneaky" / "hooks" / "pre-commit", repo, forbid=repo / ".git")
    assert "into the repository's .git" in err.value.what
    assert err.value.code == ExitCode.BLOCKED


def test_archives_refuse_a_linked_docs_archive(repo: Path, outside: Path) -> None:
    (repo / "SPEC.md").write_text("# spec\n")
    (repo / "docs").mkdir()
    (repo / "docs" / "archive").symlink_to(outside)
    with pytest.raises(PlanBuildError) as err:
        architectrecords.archive(repo)
    assert f"{repo / 'docs' / 'archive'} is a symbolic link" in err.value.what
    assert listing(outside) == []
    assert (repo / "SPEC.md").read_text() == "# spec\n"


def test_a_record_linked_to_a_file_elsewhere_is_not_archived(repo: Path, outside: Path) -> None:
    secret = outside / "notes.md"
    secret.write_text("private\n")
    (repo / "SPEC.md").symlink_to(secret)
    with pytest.raises(PlanBuildError):
        architectrecords.archive(repo)
    assert not (repo / "docs").exists()
    assert secret.read_text() == "private\n"


def test_the_identity_file_is_not_written_through_a_link(repo: Path, outside: Path) -> None:
    (repo / identity.FILENAME).symlink_to(outside / "id")
    with pytest.raises(PlanBuildError) as err:
        identity.write(gitrepo.discover(repo), "github.com/ana/shop")
    assert identity.FILENAME in err.value.what
    assert listing(outside) == []


def test_dispatch_refuses_a_tasks_md_linked_outside(repo: Path, stubs, cli, outside: Path) -> None:
    tasks_md = make_plan(repo)
    moved = outside / "TASKS.md"
    moved.write_text(tasks_md.read_text())
    tasks_md.unlink()
    tasks_md.symlink_to(moved)
    before = moved.read_bytes()
    codex_edits(stubs, {"src/app.py": "fixed\n"})

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    assert r.code == ExitCode.BLOCKED, r.stderr
    assert f"{tasks_md} is a symbolic link to {moved}, outside the repository" in r.stderr
    assert moved.read_bytes() == before
    assert not stubs.calls("codex")


def test_baseline_metadata_is_not_written_through_a_link_out_of_git(
    repo: Path, outside: Path
) -> None:
    from plan_build.delivery import baseline

    r = gitrepo.discover(repo)
    r.state_dir.mkdir(parents=True, exist_ok=True)
    os.symlink(outside, r.state_dir / "sessions")
    with pytest.raises(PlanBuildError) as err:
        baseline.capture(r, session_id="s")
    assert "is a symbolic link" in err.value.what
    assert listing(outside) == []
