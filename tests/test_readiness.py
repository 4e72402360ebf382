"""One readiness judgement: `status`, `report` and `commit` cannot disagree (ADR 0185).

Real repositories are put in each state a session can be in before its commit (and in a few
at once). In every one, `status` lists exactly the refusals `commit`'s own probe of the live
repository finds, in the same order, and `commit` refuses with the first of them (its message,
fix and exit code) or, when there is none, gets as far as asking for approval.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from plan_build.core import gitrepo
from plan_build.core.errors import PlanBuildError
from plan_build.delivery import baseline, readiness
from plan_build.delivery import commit as commit_mod
from plan_build.views import status as view
from tests.support.gitcmd import git
from tests.support.paths import ROOT

SRC = ROOT / "src" / "plan_build"


def _verify(cli, repo: Path) -> None:
    cli("verify", cwd=repo)


def _edit(repo: Path) -> None:
    (repo / "app.py").write_text("x = 1\n")


def nothing(repo: Path, cli) -> None:
    """Only the baseline: no change yet."""


def unverified(repo: Path, cli) -> None:
    _edit(repo)


def verified(repo: Path, cli) -> None:
    _edit(repo)
    _verify(cli, repo)


def verified_then_edited(repo: Path, cli) -> None:
    verified(repo, cli)
    (repo / "app.py").write_text("x = 2\n")


def verify_failed(repo: Path, cli) -> None:
    (repo / "notes.txt").write_text("trailing space \n")
    _verify(cli, repo)


def verify_record_damaged(repo: Path, cli) -> None:
    verified(repo, cli)
    r = gitrepo.discover(repo)
    from plan_build.delivery import verifyrecord

    verifyrecord.record_path(r, "s9").write_text("{not json")


def head_moved(repo: Path, cli) -> None:
    (repo / "app.py").write_text("by hand\n")
    git(repo, "add", "app.py")
    git(repo, "commit", "-qm", "by hand")
    (repo / "other.py").write_text("y = 1\n")


def branch_changed(repo: Path, cli) -> None:
    git(repo, "switch", "-qc", "elsewhere")
    verified(repo, cli)


def merge_in_progress(repo: Path, cli) -> None:
    """A conflicting merge left half done: git is busy, a path is unmerged."""
    git(repo, "switch", "-qc", "theirs")
    (repo / "README.md").write_text("theirs\n")
    git(repo, "commit", "-qam", "theirs")
    git(repo, "switch", "-q", "-")
    (repo / "README.md").write_text("ours\n")
    git(repo, "commit", "-qam", "ours")
    # the baseline is taken again below the merge: HEAD is where the session starts
    baseline.capture(gitrepo.discover(repo), session_id="s9", mode="standard")
    assert gitrepo.discover(repo).git("merge", "theirs", check=False).ok is False


def overlap(repo: Path, cli) -> None:
    """The session edits the line next to one the user changed before the session began."""
    lines = [f"line {i}\n" for i in range(10)]
    (repo / "shared.txt").write_text("".join(lines))
    git(repo, "add", "shared.txt")
    git(repo, "commit", "-qm", "shared")
    lines[4] = "mine before the session\n"
    (repo / "shared.txt").write_text("".join(lines))
    baseline.capture(gitrepo.discover(repo), session_id="s9", mode="standard")
    lines[5] = "the session's\n"
    (repo / "shared.txt").write_text("".join(lines))
    _verify(cli, repo)


def review_broken(repo: Path, cli) -> None:
    broken = repo / ".claude" / "codex-review" / "workflows" / "20261203-100000-abcdef"
    broken.mkdir(parents=True)
    (broken / "workflow.json").write_text("{not json")
    verified(repo, cli)


def review_active(repo: Path, cli) -> None:
    from datetime import UTC, datetime

    from plan_build.review.layout import WorkflowDir
    from plan_build.review.workflowfile import create, save

    now = datetime(2026, 12, 3, 10, 0, tzinfo=UTC)
    wdir = WorkflowDir(repo, "20261203-100000-aaaaaa")
    wdir.artifacts.mkdir(parents=True)
    save(wdir, create(wdir, now, "bench"), now)
    verified(repo, cli)


def nobody(repo: Path, cli, monkeypatch: pytest.MonkeyPatch) -> None:
    """git cannot say who writes the commit."""
    verified(repo, cli)
    for var in ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"):
        monkeypatch.delenv(var)
    Path(os.environ["GIT_CONFIG_GLOBAL"]).write_text("[user]\n\tuseConfigOnly = true\n")


def everything_at_once(repo: Path, cli) -> None:
    review_broken(repo, cli)
    head_moved(repo, cli)
    (repo / "notes.txt").write_text("after verify\n")


STATES: list[Callable[..., None]] = [
    nothing,
    unverified,
    verified,
    verified_then_edited,
    verify_failed,
    verify_record_damaged,
    head_moved,
    branch_changed,
    merge_in_progress,
    overlap,
    review_broken,
    review_active,
    nobody,
    everything_at_once,
]
TAKE_THEIR_OWN_BASELINE = (merge_in_progress, overlap)
EXPECTED = {  # the kinds each state must show, so a walk that finds nothing cannot pass
    "nothing": ["empty"],
    "unverified": ["verify"],
    "verified": [],
    "verified_then_edited": ["verify"],
    "verify_failed": ["verify"],
    "verify_record_damaged": ["verify"],
    "head_moved": ["head", "verify"],
    "branch_changed": ["branch"],
    "merge_in_progress": ["busy", "conflicts", "verify"],
    "overlap": ["overlap"],
    "review_broken": ["review"],
    "review_active": ["review"],
    "nobody": ["identity"],
    "everything_at_once": ["head", "verify", "review"],
}


@pytest.mark.parametrize("state", STATES, ids=lambda f: f.__name__)
def test_status_lists_what_commit_refuses_and_commit_raises_the_first(
    state: Callable[..., None], repo: Path, cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    if state not in TAKE_THEIR_OWN_BASELINE:
        baseline.capture(gitrepo.discover(repo), session_id="s9", mode="standard")
    if state is nobody:
        state(repo, cli, monkeypatch)
    else:
        state(repo, cli)
    env = dict(os.environ)
    r = gitrepo.discover(repo, env)
    base = baseline.current(r, env)

    live = list(readiness.refusals(commit_mod.Live(r, base)))
    assert [x.kind for x in live] == EXPECTED[state.__name__]
    kinds = [x.kind for x in live]
    assert kinds == sorted(kinds, key=readiness.KINDS.index)  # commit's order

    facts = view.gather(r, env, repo)
    assert list(facts.missing) == [x.brief for x in live]
    assert facts.ready is (not live)
    assert view.as_json(facts)["missing"] == [x.brief for x in live]

    if live:
        with pytest.raises(PlanBuildError) as caught:
            commit_mod.prepare(r, base)
        first = live[0].error
        assert (caught.value.what, caught.value.fix, caught.value.code) == (
            first.what,
            first.fix,
            first.code,
        )
        assert type(caught.value) is type(first)
    else:
        plan, record, review = commit_mod.prepare(r, base)
        assert record["ok"] is True
        assert plan.change.tree == facts.session.change.tree  # type: ignore[union-attr]
        assert review.startswith("no review recorded")
        assert facts.next == "plan-build commit"


def test_the_report_says_what_status_says(repo: Path, cli) -> None:
    baseline.capture(gitrepo.discover(repo), session_id="s9", mode="standard")
    everything_at_once(repo, cli)
    env = dict(os.environ)
    r = gitrepo.discover(repo, env)
    from plan_build.views import storyread

    story = storyread.gather(r, env, repo, None)
    assert story.outcome == "missing: " + "; ".join(view.gather(r, env, repo).missing)


def test_no_view_holds_a_refusal_rule_of_its_own() -> None:
    """The phrases and the rules live in delivery/readiness.py; the views only ask it."""
    rule_text = (
        "verify has not run",
        "verification failed (",
        "review is not approved",
        "approval is stale",
        "there is no intended change",
        "ACCEPTABLE_AT_COMMIT",
        "review_gate",
    )
    for path in sorted((SRC / "views").glob("*.py")):
        text = path.read_text()
        for phrase in rule_text:
            assert phrase not in text, f"{path.name} words a refusal itself: {phrase!r}"
    readiness_text = (SRC / "delivery" / "readiness.py").read_text()
    for phrase in rule_text[:5]:
        assert phrase in readiness_text
    # and commit raises nothing before approval that readiness does not list
    prepare = (SRC / "delivery" / "commit.py").read_text().split("def prepare(")[1]
    prepare = prepare.split("\ndef ")[0]
    assert "PlanBuildError(" not in prepare
    assert re.search(r"readiness\.refusals\(", prepare)
