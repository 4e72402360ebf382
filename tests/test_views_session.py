"""The session header both views show (views/session.py): what a person coming back sees first,
read from the records and never guessed."""

from __future__ import annotations

from pathlib import Path

from plan_build.core import gitrepo
from plan_build.delivery import baseline
from plan_build.views import session as facts
from tests.support.gitcmd import git


def test_a_launched_session_says_who_it_is_and_what_it_changed(repo: Path) -> None:
    (repo / ".agentmemory-project").write_text("github.com/acme/shop\n")
    git(repo, "add", ".agentmemory-project")
    git(repo, "commit", "-qm", "identity")
    r = gitrepo.discover(repo)
    base = baseline.capture(
        r,
        session_id="s1",
        mode="architect",
        memory_mode="degraded",
        memory_reason="memory.server: no AgentMemory server answers",
    )
    (repo / "README.md").write_text("# shop\n\nmore\n")
    (repo / "app.py").write_text("a = 1\nb = 2\n")
    (repo / "logo.bin").write_bytes(b"\0\1\2")

    got = facts.gather(r, {})

    assert (got.id, got.mode, got.started_at) == ("s1", "architect", base.created)
    assert got.baseline_commit == base.head
    assert not got.head_moved
    assert got.identity.as_json() == {
        "value": "github.com/acme/shop",
        "committed": True,
        "problem": None,
    }
    assert got.memory.as_json() == {
        "mode": "degraded",
        "reason": "memory.server: no AgentMemory server answers",
        "source": "baseline",
    }
    assert got.change is not None
    by_path = {f.path: (f.status, f.added, f.removed) for f in got.change.files}
    assert by_path == {
        "README.md": ("M", 2, 0),
        "app.py": ("A", 2, 0),
        "logo.bin": ("A", None, None),
    }
    assert got.change.summary() == "3 files, +4 −0"


def test_a_hand_taken_baseline_leaves_unknowns_unknown(repo: Path) -> None:
    r = gitrepo.discover(repo)
    baseline.capture(r, session_id="s2")
    got = facts.gather(r, {})
    assert got.mode is None
    assert got.memory.as_json() == {"mode": None, "reason": None, "source": None}
    assert got.identity.value is None
    assert got.identity.problem == ".agentmemory-project is missing"
    assert got.change is not None
    assert got.change.empty
    # inside the session's own Claude, the launch environment answers for memory
    env = {"PLAN_BUILD_SESSION": "s2", "PLAN_BUILD_MEMORY_MODE": "required"}
    assert facts.gather(r, env).memory.mode == "required"
    other = {**env, "PLAN_BUILD_SESSION": "other"}
    assert facts.gather(r, other, session_id="s2").memory.mode is None


def test_a_committed_session_shows_what_its_commit_changed(repo: Path) -> None:
    r = gitrepo.discover(repo)
    base = baseline.capture(r, session_id="s3")
    (repo / "app.py").write_text("x = 1\n")
    git(repo, "add", "app.py")
    git(repo, "commit", "-qm", "the session's commit")
    sha = git(repo, "rev-parse", "HEAD").strip()
    baseline.mark_committed(r, base, sha)
    (repo / "later.txt").write_text("after the commit\n")  # not the session's any more

    got = facts.gather(r, {})
    assert got.committed == sha
    assert not got.head_moved
    assert got.change is not None
    assert [(f.path, f.added) for f in got.change.files] == [("app.py", 1)]


def test_an_unknown_identity_problem_is_named_not_raised(repo: Path) -> None:
    (repo / ".agentmemory-project").write_text("local/abc\n")
    r = gitrepo.discover(repo)
    baseline.capture(r, session_id="s4")
    got = facts.gather(r, {})
    assert got.identity.as_json() == {
        "value": "local/abc",
        "committed": False,
        "problem": ".agentmemory-project is not committed",
    }
