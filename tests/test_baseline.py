"""The session baseline: what a user notices when a session starts and plan-build snapshots
the repository (nothing of theirs changes; the snapshot survives; odd states are refused)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from plan_build.core import gitrepo
from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.delivery import baseline
from tests.support.gitcmd import git


def user_state(repo: Path) -> tuple[bytes, str, str]:
    """What the user could see: the index bytes, status and the list of refs/branches."""
    gd = Path(git(repo, "rev-parse", "--absolute-git-dir").strip())
    return (
        (gd / "index").read_bytes(),
        git(repo, "status", "--porcelain=v2", "--branch", "--untracked-files=all"),
        git(repo, "for-each-ref", "refs/heads", "refs/tags"),
    )


def dirty(repo: Path) -> None:
    (repo / "README.md").write_text("# shop\nstaged line\n")
    git(repo, "add", "README.md")
    (repo / "README.md").write_text("# shop\nstaged line\nunstaged line\n")
    (repo / "notes.txt").write_text("my notes\n")
    (repo / ".gitignore").write_text("*.log\n")
    (repo / "run.log").write_text("ignored\n")


def test_baseline_records_head_staged_and_full_tree_without_touching_anything(
    repo: Path, cli
) -> None:
    dirty(repo)
    before = user_state(repo)

    r = cli("baseline", cwd=repo)

    assert r.code == 0, r.stderr
    sid = r.stdout.strip()
    assert "3 path(s) with uncommitted changes kept apart" in r.stderr
    assert user_state(repo) == before
    ref = git(repo, "rev-parse", f"refs/plan-build/sessions/{sid}").strip()
    meta = json.loads((repo / ".git/plan-build/sessions" / sid / "baseline.json").read_text())
    assert meta["pin"] == ref
    assert meta["head"] == git(repo, "rev-parse", "HEAD").strip()
    assert meta["branch"] == "main"
    # The pinned trees hold exactly the user's staged and full work-tree states.
    staged = git(repo, "cat-file", "-p", f"{meta['staged_tree']}").split()
    assert git(repo, "show", f"{meta['staged_tree']}:README.md") == "# shop\nstaged line\n"
    assert "notes.txt" not in staged
    files = git(repo, "ls-tree", "-r", "--name-only", meta["worktree_tree"]).split()
    assert files == [".gitignore", "README.md", "notes.txt"]  # run.log is ignored
    assert git(repo, "show", f"{meta['worktree_tree']}:README.md").endswith("unstaged line\n")
    # The pin is not a branch and git gc keeps the snapshot.
    assert sid not in git(repo, "branch", "-a")
    git(repo, "gc", "-q", "--prune=now")
    assert git(repo, "cat-file", "-t", meta["worktree_tree"]).strip() == "tree"


def test_baseline_json_and_chosen_id(repo: Path, cli) -> None:
    r = cli("baseline", "--id", "review-42", "--mode", "architect", "--json", cwd=repo)
    assert r.code == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["id"] == "review-42"
    assert data["mode"] == "architect"
    again = cli("baseline", "--id", "review-42", cwd=repo)
    assert again.code == ExitCode.USAGE
    assert "session review-42 already has a baseline" in again.stderr


@pytest.mark.parametrize("bad", ["../x", "a b", "x.lock", ".hidden", "a..b", "", "x" * 65])
def test_bad_session_ids_are_refused_before_anything_is_written(repo: Path, bad: str) -> None:
    r = gitrepo.discover(repo)
    with pytest.raises(PlanBuildError) as exc:
        baseline.capture(r, session_id=bad)
    assert exc.value.code == ExitCode.USAGE
    assert "not a valid session id" in exc.value.what
    assert not (repo / ".git/plan-build").exists()


def test_bad_mode_is_a_usage_error(repo: Path, cli) -> None:
    r = cli("baseline", "--mode", "fast", cwd=repo)
    assert r.code == ExitCode.USAGE
    assert "--mode must be standard or architect" in r.stderr


def test_refused_during_a_merge_with_conflicts(repo: Path, cli) -> None:
    git(repo, "switch", "-q", "-c", "other")
    (repo / "README.md").write_text("# other\n")
    git(repo, "commit", "-qam", "other")
    git(repo, "switch", "-q", "main")
    (repo / "README.md").write_text("# main\n")
    git(repo, "commit", "-qam", "main")
    subprocess.run(["git", "merge", "-q", "other"], cwd=repo, capture_output=True, check=False)
    before = user_state(repo)

    r = cli("baseline", cwd=repo)

    assert r.code == ExitCode.BLOCKED
    assert "cannot take a session baseline: a merge is in progress" in r.stderr
    assert "fix:" in r.stderr
    assert user_state(repo) == before
    assert git(repo, "for-each-ref", "refs/plan-build") == ""


def test_refused_with_unmerged_paths_after_a_merge_was_half_undone(repo: Path) -> None:
    git(repo, "switch", "-q", "-c", "other")
    (repo / "README.md").write_text("# other\n")
    git(repo, "commit", "-qam", "other")
    git(repo, "switch", "-q", "main")
    (repo / "README.md").write_text("# main\n")
    git(repo, "commit", "-qam", "main")
    subprocess.run(["git", "merge", "-q", "other"], cwd=repo, capture_output=True, check=False)
    (repo / ".git/MERGE_HEAD").unlink()  # the conflict entries stay in the index
    with pytest.raises(PlanBuildError) as exc:
        baseline.capture(gitrepo.discover(repo))
    assert "unresolved conflicts (README.md)" in exc.value.what


def test_refused_during_a_rebase(repo: Path) -> None:
    (repo / ".git/rebase-merge").mkdir()
    with pytest.raises(PlanBuildError, match="a rebase"):
        baseline.capture(gitrepo.discover(repo))


def test_unborn_branch_and_detached_head(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    git(fresh, "init", "-q")
    (fresh / "app.py").write_text("print('hi')\n")
    b = baseline.capture(gitrepo.discover(fresh))
    assert b.head is None
    assert b.branch == "main"
    assert b.head_tree == "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
    assert git(fresh, "ls-tree", "--name-only", b.worktree_tree).split() == ["app.py"]
    assert git(fresh, "status", "--porcelain") == "?? app.py\n"


def test_detached_head_is_recorded(repo: Path) -> None:
    git(repo, "switch", "-q", "--detach")
    b = baseline.capture(gitrepo.discover(repo))
    assert b.branch is None
    assert b.head == git(repo, "rev-parse", "HEAD").strip()


def test_linked_worktree_has_its_own_session_and_shares_the_state_dir(repo: Path, cli) -> None:
    wt = repo.parent / "shop-feature"
    git(repo, "worktree", "add", "-q", "-b", "feature", str(wt))
    (wt / "feature.txt").write_text("wip\n")
    index = Path(git(wt, "rev-parse", "--absolute-git-dir").strip()) / "index"
    index_before = index.read_bytes()
    main_index = (repo / ".git/index").read_bytes()

    r = cli("baseline", cwd=wt)

    assert r.code == 0, r.stderr
    sid = r.stdout.strip()
    assert index.read_bytes() == index_before
    assert (repo / ".git/index").read_bytes() == main_index
    # Metadata and ref live in the common dir, visible from both worktrees.
    assert (repo / ".git/plan-build/sessions" / sid / "baseline.json").exists()
    assert git(repo, "rev-parse", f"refs/plan-build/sessions/{sid}").strip()
    # The main worktree has no session of its own; the linked one finds its latest.
    assert cli("status", cwd=repo).code == ExitCode.USAGE
    st = cli("status", cwd=wt)
    assert st.code == 0, st.stderr
    assert "A  feature.txt" not in st.stderr  # pre-existing, so not intended
    assert "no intended change yet" in st.stderr


def test_current_session_comes_from_the_environment_or_the_latest(repo: Path) -> None:
    r = gitrepo.discover(repo)
    first = baseline.capture(r, session_id="first")
    second = baseline.capture(r, session_id="second")
    assert baseline.current(r, {}).id == second.id
    assert baseline.current(r, {"PLAN_BUILD_SESSION": "first"}).id == first.id
    with pytest.raises(PlanBuildError, match="there is no session nope"):
        baseline.current(r, {"PLAN_BUILD_SESSION": "nope"})


def test_no_session_is_a_clear_error(repo: Path, cli) -> None:
    r = cli("status", cwd=repo)
    assert r.code == ExitCode.USAGE
    assert "no session baseline for the worktree at" in r.stderr
    assert "plan-build baseline" in r.stderr


def test_session_of_another_worktree_is_refused(repo: Path) -> None:
    wt = repo.parent / "shop-b"
    git(repo, "worktree", "add", "-q", "-b", "b", str(wt))
    baseline.capture(gitrepo.discover(wt), session_id="in-b")
    with pytest.raises(PlanBuildError, match="belongs to the worktree at"):
        baseline.current(gitrepo.discover(repo), {"PLAN_BUILD_SESSION": "in-b"})


def test_lost_metadata_is_recovered_from_the_pin(repo: Path) -> None:
    r = gitrepo.discover(repo)
    b = baseline.capture(r, session_id="keep")
    (repo / ".git/plan-build/sessions/keep/baseline.json").unlink()
    again = baseline.load(r, "keep")
    assert again == b


def test_moved_pin_is_reported_as_damage(repo: Path) -> None:
    r = gitrepo.discover(repo)
    baseline.capture(r, session_id="s1")
    git(repo, "update-ref", "refs/plan-build/sessions/s1", "HEAD")
    with pytest.raises(PlanBuildError, match="damaged: refs/plan-build/sessions/s1 was moved"):
        baseline.load(r, "s1")
