"""Broken workflow folders say how to mend them, and are never worked around (issue 24 item 2);
the interop divergences of item 3 (task text with a CR, owner_project_key in either form).

The real `plan-build` entry point with stub `codex` on PATH and a Claude session file for this
test process (tests/support/reviewkit)."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import pytest

from plan_build.core import gitrepo
from plan_build.core.claudesessions import ClaudeSession
from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.delivery.commitapproval import review_gate
from plan_build.review import folders
from plan_build.review.layout import WorkflowDir
from plan_build.review.resolution import resolve
from plan_build.review.workflowfile import create, dumps, load, save, task_text
from tests.support.reviewkit import (
    PLAN,
    SESSION_ID,
    WORKFLOWS,
    claude_session,
    start_plan_review,
    tree_bytes,
)

MOVE = "move the folder aside: mkdir -p"


def _cut(wf_id: str) -> bytes:
    return b'{"version": 2, "id": "' + wf_id.encode() + b'", "phase": "pla'


def _with(wf_id: str, **change: object) -> bytes:
    data: dict[str, object] = {"version": 2, "id": wf_id, "task": "t", "phase": "plan"}
    data |= {"round": 1, "status": "active", "owner_session_id": SESSION_ID} | change
    return json.dumps(data).encode()


# form -> (the broken bytes, a word of the reason, a word of the fix)
FORMS = {
    "cut in half": (_cut, "not JSON", MOVE),
    "an array": (lambda i: b"[1, 2]", "the top level is not an object", MOVE),
    "version 99": (lambda i: _with(i, version=99), "version 99", "reads workflow.json version 2"),
    "unknown phase": (lambda i: _with(i, phase="deploy"), "'deploy'", 'set "phase" in'),
    "id differs": (
        lambda i: _with(i, id="20261101-000000-999999"),
        "does not match its directory",
        "move it to its own name: mv",
    ),
    "not UTF-8": (lambda i: b'{"id": "\xff\xfe"}', "not UTF-8", MOVE),
    "nested 100,000 deep": (lambda i: b"[" * 100_000 + b"]" * 100_000, "nested deeper", MOVE),
    "empty": (lambda i: b"", "it is empty", MOVE),
}


@pytest.fixture
def project(repo: Path, private_home: Path, stubs) -> Path:
    (repo.parent / "plan.md").write_text(PLAN)
    claude_session(private_home, repo)
    return repo


def _break(wf: Path, form: str) -> None:
    (wf / "workflow.json").write_bytes(FORMS[form][0](wf.name))


def test_every_broken_form_is_classified_with_its_reason_and_fix(tmp_path: Path) -> None:
    for n, form in enumerate(FORMS):
        wf_id = f"20261101-000000-00000{n}"
        wdir = WorkflowDir(tmp_path, wf_id)
        wdir.path.mkdir(parents=True)
        (wdir.workflow_json).write_bytes(FORMS[form][0](wf_id))
    found, skipped = folders.scan(tmp_path)
    assert found == []
    assert len(skipped) == len(FORMS)
    for item, (form, (_, why, fix)) in zip(skipped, FORMS.items(), strict=True):
        assert why in item.why, (form, item.why)
        assert fix in item.fix, (form, item.fix)
        text = item.warning()
        assert text.count("fix:") == 1, form
        assert f"file: {item.path}" in text, form


@pytest.mark.parametrize("form", list(FORMS))
def test_a_broken_owned_folder_warns_once_for_readers_and_stops_actors(
    cli, stubs, project: Path, form: str
) -> None:
    wf = start_plan_review(cli, stubs, project)
    _break(wf, form)
    before = tree_bytes(project)

    for command in ("review.status", "review.summary"):
        r = cli(command, cwd=project)
        assert r.code == 0, (command, r.stderr)
        assert r.stderr.count(f"warning: skipped workflow folder {wf.name}:") == 1, r.stderr
        assert r.stderr.count("  fix: ") == 1
        assert f"file: {wf / 'workflow.json'}" in r.stderr
        assert FORMS[form][2] in r.stderr
        assert "No active workflow found." in r.stderr

    for command in ("review", "review.approve", "review.plan"):
        r = cli(command, cwd=project)
        assert r.code == ExitCode.PREFLIGHT == 3, (command, r.stderr)
        assert f"workflow folder {wf.name} is broken" in r.stderr
        assert f"belongs to Claude session {SESSION_ID}" in r.stderr
        assert FORMS[form][2] in r.stderr

    with pytest.raises(PlanBuildError) as err:  # commit's review gate: not "unreviewed"
        review_gate(gitrepo.discover(project, env={"HOME": str(Path.home())}))
    assert err.value.code == ExitCode.PREFLIGHT
    assert wf.name in str(err.value)
    assert tree_bytes(project) == before  # nothing written, no fresh workflow beside it


def test_the_only_folder_broken_and_unowned_also_stops_review_and_commit(
    cli, stubs, project: Path
) -> None:
    wdir = WorkflowDir(project, "20261101-000000-000001")
    wdir.path.mkdir(parents=True)
    wdir.workflow_json.write_text("[]")
    r = cli("review.plan", "--plan", "../plan.md", cwd=project)
    assert r.code == 3, r.stderr
    assert "no workflow folder is readable" in r.stderr
    assert [p.name for p in (project / WORKFLOWS).iterdir()] == [wdir.id]
    with pytest.raises(PlanBuildError) as err:
        review_gate(gitrepo.discover(project, env={"HOME": str(Path.home())}))
    assert err.value.code == 3


def test_someone_elses_broken_folder_beside_a_readable_one_does_not_stop_the_session(
    cli, stubs, project: Path
) -> None:
    wf = start_plan_review(cli, stubs, project)
    other = project / WORKFLOWS / "20261101-000000-000002"
    other.mkdir()
    (other / "workflow.json").write_bytes(_with(other.name, owner_session_id="x", phase="ship"))
    r = cli("review", cwd=project)
    assert r.code != 3, r.stderr
    assert r.stderr.count("warning: skipped workflow folder 20261101-000000-000002") == 1
    assert load(WorkflowDir(project, wf.name)).active


# --- item 3: interop ----------------------------------------------------------------------


def test_task_text_keeps_a_cr_inside_like_codex_review_and_escapes_it_only_when_shown(
    cli, stubs, project: Path
) -> None:
    assert task_text("Fix  the\tpager\r\nnow ") == "Fix  the\tpager\r now"
    wdir = WorkflowDir(project, "20261130-100000-abcdef")
    wdir.artifacts.mkdir(parents=True)
    wdir.plan.write_text(PLAN)
    wf = create(wdir, dt.datetime(2026, 11, 30, tzinfo=dt.UTC), "Fix  the\tpager\r\nnow ")
    save(wdir, wf, dt.datetime(2026, 11, 30, tzinfo=dt.UTC))
    assert json.loads(wdir.workflow_json.read_text())["task"] == "Fix  the\tpager\r now"
    r = cli("review.status", cwd=project)
    assert r.code == 0, r.stderr
    assert "Fix  the\\tpager\\r now" in r.stderr
    assert "\r" not in r.stderr


@pytest.mark.parametrize(
    "key",
    ["-tmp-x.ab_c", "-tmp-x-ab-c"],  # codex-review v0.7.3's form, plan-build's (Claude's) form
)
def test_a_workflow_written_with_either_project_key_resolves_for_a_cwd_with_dot_and_underscore(
    tmp_path: Path, private_home: Path, key: str
) -> None:
    root = tmp_path / "x.ab_c"
    wdir = WorkflowDir(root, "20261130-100000-abcdef")
    wdir.path.mkdir(parents=True)
    when = dt.datetime(2026, 11, 30, tzinfo=dt.UTC)
    wf = create(wdir, when, "t")
    wf.owner_session_id, wf.owner_cwd, wf.owner_project_key = SESSION_ID, str(root), key
    wdir.workflow_json.write_text(dumps(wf))
    session = ClaudeSession(os.getpid(), SESSION_ID, str(root), Path("/dev/null"), "process tree")
    res = resolve(root, session, {"HOME": str(private_home)}, acting=True)
    assert res.workflow is not None
    assert res.workflow.id == wdir.id
    assert not res.claim  # already this session's: the key as written is kept
    assert res.workflow.owner_project_key == key
