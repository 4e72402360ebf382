"""The AgentMemory identity: grammar, origin normalisation, first run, HEAD checks."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from plan_build.core import gitrepo
from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.startup import identity
from tests.support.gitcmd import git


@pytest.mark.parametrize(
    "value",
    [
        "github.com/ana/shop",
        "local/550e8400-e29b-41d4-a716-446655440000",
        "ab",
        "A" * 128,
        "gitlab.example.com:8443/group/sub/repo",
        "x_y.z-1",
    ],
)
def test_valid_ids_are_accepted(value: str) -> None:
    assert identity.validate(value + "\n") == value


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ("a", "too short"),
        ("a" * 129, "too long"),
        ("has space", "whitespace"),
        ("tab\there", "whitespace"),
        ("-leading", "must start with a letter or digit"),
        (".hidden", "must start with a letter or digit"),
        ("one\ntwo\n", "more than one line"),
        ("", "is empty"),
        ("bad*char", "may only contain"),
        ("ünïcode", "must start with a letter or digit"),
    ],
)
def test_invalid_ids_say_what_is_wrong(raw: str, problem: str) -> None:
    with pytest.raises(PlanBuildError) as err:
        identity.validate(raw)
    assert problem in err.value.what
    assert err.value.fix
    assert "plan-build identity --set" in err.value.fix


@given(st.from_regex(identity.GRAMMAR, fullmatch=True))
def test_every_id_of_the_grammar_validates(value: str) -> None:
    assert identity.validate(value) == value


@given(st.text(max_size=140))
def test_validate_accepts_exactly_the_grammar(raw: str) -> None:
    ok = re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._:/-]{1,127}\n?", raw) is not None
    try:
        identity.validate(raw)
    except PlanBuildError:
        assert not ok
    else:
        assert ok


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://github.com/ana/shop.git", "github.com/ana/shop"),
        ("https://github.com/ana/shop", "github.com/ana/shop"),
        ("https://user:s3cret@GitHub.com/ana/shop.git/", "github.com/ana/shop"),
        ("ssh://git@github.com:22/ana/shop.git", "github.com/ana/shop"),
        ("git@github.com:ana/shop.git", "github.com/ana/shop"),
        ("github.com:ana/shop", "github.com/ana/shop"),
        ("git@gitlab.example.org:group/sub/repo.git", "gitlab.example.org/group/sub/repo"),
        ("/srv/git/shop.git", None),
        ("file:///srv/git/shop.git", None),
        ("../shop", None),
        ("", None),
    ],
)
def test_origin_urls_normalise_to_host_owner_repository(url: str, expected: str | None) -> None:
    assert identity.normalize_origin(url) == expected


def test_proposal_falls_back_to_a_local_uuid(repo: Path) -> None:
    r = gitrepo.discover(repo)
    assert re.fullmatch(r"local/[0-9a-f-]{36}", identity.propose(r))
    git(repo, "remote", "add", "origin", "git@github.com:ana/shop.git")
    assert identity.propose(r) == "github.com/ana/shop"


def test_uncommitted_and_differing_identities_are_refused(repo: Path) -> None:
    r = gitrepo.discover(repo)
    (repo / ".agentmemory-project").write_text("github.com/ana/shop\n")
    with pytest.raises(PlanBuildError) as err:
        identity.require_committed(r)
    assert "is not committed" in err.value.what
    assert err.value.code == ExitCode.PREFLIGHT
    git(repo, "add", ".agentmemory-project")
    git(repo, "commit", "-q", "-m", "id")
    assert identity.require_committed(r) == identity.Identity("github.com/ana/shop", True)
    (repo / ".agentmemory-project").write_text("github.com/ana/shop-old\n")
    with pytest.raises(PlanBuildError) as err:
        identity.read(r)
    assert str(err.value) == (
        '.agentmemory-project differs from HEAD ("github.com/ana/shop-old" here, '
        '"github.com/ana/shop" committed)\n'
        "  fix: commit the new identity (git add .agentmemory-project && git commit -m "
        '"Add AgentMemory project identity" -- .agentmemory-project) or restore it '
        "(git restore .agentmemory-project)"
    )


def test_linked_worktrees_share_the_committed_identity(repo: Path, tmp_path: Path) -> None:
    (repo / ".agentmemory-project").write_text("github.com/ana/shop\n")
    git(repo, "add", ".agentmemory-project")
    git(repo, "commit", "-q", "-m", "id")
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", str(linked), "-b", "feature")
    r = gitrepo.discover(linked)
    assert r.root == linked
    assert r.common_dir == (repo / ".git").resolve()
    assert identity.require_committed(r) == identity.Identity("github.com/ana/shop", True)


def test_identity_command_shows_sets_and_asks_for_a_commit(cli, repo: Path) -> None:
    r = cli("identity", cwd=repo)
    assert r.code == 4  # no terminal to approve the proposal
    assert ".agentmemory-project is missing" in r.stderr
    assert "plan-build identity --set local/" in r.stderr

    r = cli("identity", "--set", "bad id", cwd=repo)
    assert r.code == 3
    assert "contains whitespace" in r.stderr
    assert not (repo / ".agentmemory-project").exists()

    r = cli("identity", "--set", "github.com/ana/shop", cwd=repo)
    assert r.code == 5
    assert (repo / ".agentmemory-project").read_text() == "github.com/ana/shop\n"
    assert "git add .agentmemory-project && git commit" in r.stderr

    git(repo, "add", ".agentmemory-project")
    git(repo, "commit", "-q", "-m", "identity")
    r = cli("identity", cwd=repo)
    assert (r.code, r.stdout) == (0, "github.com/ana/shop\n")
    r = cli("identity", "--set", "github.com/ana/shop", cwd=repo)
    assert r.code == 0
    assert "already" in r.stderr


def test_identity_on_a_terminal_proposes_and_writes_after_approval(repo: Path) -> None:
    """As `plan` does: propose, ask, write on yes (exit 5 with the commit command)."""
    import os
    import sys

    from tests.support.pty_run import run_on_pty

    git(repo, "remote", "add", "origin", "git@github.com:ana/shop.git")
    argv = [sys.executable, "-m", "plan_build", "identity"]
    env = {**os.environ, "NO_COLOR": "1"}
    r = run_on_pty(argv, cwd=repo, env=env, typed=[("with this id?", "n\n")])
    assert r.code == 4, r.output
    assert 'proposed id: "github.com/ana/shop"' in r.output
    assert not (repo / ".agentmemory-project").exists()

    r = run_on_pty(argv, cwd=repo, env=env, typed=[("with this id?", "y\n")])
    assert r.code == 5, r.output
    assert (repo / ".agentmemory-project").read_text() == "github.com/ana/shop\n"
    assert "git add .agentmemory-project && git commit" in r.output


def test_identity_without_a_terminal_says_what_it_would_propose_and_exits_4(
    cli, repo: Path
) -> None:
    git(repo, "remote", "add", "origin", "https://github.com/ana/shop.git")
    r = cli("identity", cwd=repo)
    assert (r.code, r.stdout) == (4, "")
    assert 'proposed id: "github.com/ana/shop"' in r.stderr
    assert "no terminal to approve" in r.stderr
    assert "plan-build identity --set github.com/ana/shop" in r.stderr
    assert not (repo / ".agentmemory-project").exists()


def test_identity_inside_an_agent_session_never_writes_the_proposal(cli, repo: Path) -> None:
    """The new proposal path of `identity` is an approval gate like `plan`'s."""
    r = cli("identity", cwd=repo, env={"CLAUDECODE": "1"})
    assert r.code == 4
    assert "ask the user to run `plan-build identity --set" in r.stderr
    assert not (repo / ".agentmemory-project").exists()
