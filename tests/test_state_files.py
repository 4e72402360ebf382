"""Every JSON state file plan-build reads is bounded (size and nesting) and a broken one is one
clear message naming the file and the fix: never a traceback, never silently "no record"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from plan_build.core import fsutil, gitrepo
from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.delivery import baseline, commit
from plan_build.delivery import verify as verify_mod
from plan_build.review.layout import workflows_dir

DEEP = "[" * 100_000 + "]" * 100_000


def no_traceback(r, path: Path) -> None:  # type: ignore[no-untyped-def]
    assert "Traceback" not in r.stderr
    assert "internal error" not in r.stderr
    assert str(path) in r.stderr
    assert "fix:" in r.stderr


# --- the one reader -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (DEEP.encode(), f"nested deeper than {fsutil.MAX_JSON_DEPTH} levels"),
        (("[" * 500 + "]" * 500).encode(), f"nested deeper than {fsutil.MAX_JSON_DEPTH} levels"),
        (b'{"a": NaN}', "not JSON"),
        (b'{"a": ', "not JSON"),
        (b'{"a": "\xff"}', "not UTF-8"),
    ],
    ids=["100k-deep", "500-deep", "nan", "cut-short", "latin1"],
)
def test_read_json_refuses_with_one_error_naming_the_file(
    tmp_path: Path, content: bytes, why: str
) -> None:
    path = tmp_path / "state.json"
    path.write_bytes(content)
    with pytest.raises(fsutil.StateFileError) as info:
        fsutil.read_json(path)
    assert info.value.path == path
    assert str(info.value).startswith(f"{path} cannot be used: ")
    assert why in str(info.value)
    assert "fix: " in str(info.value)


def test_read_json_bounds_the_size_before_parsing(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_text('["' + "x" * (fsutil.MAX_JSON_BYTES + 10) + '"]')
    with pytest.raises(fsutil.StateFileError, match="larger than 32 MiB"):
        fsutil.read_json(path)


def test_a_missing_file_is_left_to_the_caller(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        fsutil.read_json(tmp_path / "none.json")


def test_write_json_is_strict_and_reads_back(tmp_path: Path) -> None:
    path = tmp_path / "s" / "state.json"
    fsutil.write_json(path, {"b": [1, {"c": "ü"}], "a": None}, sort_keys=True)
    assert path.read_text().endswith("\n")
    assert fsutil.read_json(path) == {"a": None, "b": [1, {"c": "ü"}]}
    with pytest.raises(ValueError, match="JSON compliant"):
        fsutil.write_json(path, {"x": float("nan")})
    assert fsutil.read_json(path) == {"a": None, "b": [1, {"c": "ü"}]}  # the old file stayed


# --- the state files, through the commands that read them -----------------------------------


def test_a_deeply_nested_workflow_json_is_one_message(repo: Path, cli) -> None:
    wf = workflows_dir(repo) / "wf-1" / "workflow.json"
    wf.parent.mkdir(parents=True)
    wf.write_text(DEEP)
    r = cli("review.status", "--workflow", "wf-1", cwd=repo)
    assert r.code != 0
    no_traceback(r, wf)
    assert f"nested deeper than {fsutil.MAX_JSON_DEPTH} levels" in r.stderr


def test_a_review_round_record_nested_too_deep_is_one_message(repo: Path) -> None:
    from plan_build.review import roundfiles
    from plan_build.review.layout import WorkflowDir

    wdir = WorkflowDir(repo, "wf-1")
    path = wdir.record("implement", 1)
    path.parent.mkdir(parents=True)
    path.write_text(DEEP)
    with pytest.raises(fsutil.StateFileError) as info:
        roundfiles.load_round(wdir, "implement", 1)
    assert info.value.path == path


def _session(repo: Path) -> gitrepo.Repo:
    r = gitrepo.discover(repo)
    baseline.capture(r, session_id="s")
    (repo / "work.txt").write_text("session work\n")
    return r


@pytest.mark.parametrize("content", [DEEP, "{not json", '["old", "new"]'])
def test_a_broken_commit_pending_file_is_one_message(repo: Path, cli, content: str) -> None:
    r = _session(repo)
    pending = commit.pending_path(r, "s")
    pending.write_text(content)
    out = cli("commit", "--message", "m", cwd=repo)
    assert out.code == ExitCode.BLOCKED, out.stderr
    no_traceback(out, pending)
    assert pending.read_text() == content  # never thrown away: it may finish a commit


def test_a_broken_verify_record_is_reported_not_taken_as_unverified(repo: Path) -> None:
    r = _session(repo)
    record = verify_mod.record_path(r, "s")
    record.write_text(DEEP)
    with pytest.raises(fsutil.StateFileError) as info:
        verify_mod.last_record(r, "s")
    assert info.value.path == record
    assert "plan-build verify" in (info.value.fix or "")
    record.unlink()
    assert verify_mod.last_record(r, "s") is None  # missing: not verified, as before


def test_a_broken_baseline_json_is_one_message(repo: Path, cli) -> None:
    r = _session(repo)
    meta = baseline.meta_path(r, "s")
    meta.write_text(DEEP)
    out = cli("status", cwd=repo, env={"PLAN_BUILD_SESSION": "s"})
    assert out.code != 0
    no_traceback(out, meta)


def test_the_dispatch_task_state_is_bounded(repo: Path) -> None:
    from plan_build.dispatch import taskstate

    r = gitrepo.discover(repo)
    path = taskstate.path(r, "T1")
    path.parent.mkdir(parents=True)
    assert taskstate.read(r, "T1") == {}  # missing: no state yet, as before
    path.write_text(DEEP)
    with pytest.raises(fsutil.StateFileError) as info:
        taskstate.read(r, "T1")
    assert info.value.path == path


def test_a_deep_release_history_line_is_skipped_like_a_cut_line(tmp_path: Path) -> None:
    from plan_build.release.store import Store

    store = Store(tmp_path / "home")
    store.history_path.parent.mkdir(parents=True)
    good = json.dumps({"id": "r1", "action": "activate"})
    store.history_path.write_text(f"{DEEP}\n{good}\n{{cut")
    assert store.history() == [json.loads(good)]


def test_state_file_error_is_a_plan_build_error() -> None:
    err = fsutil.StateFileError(Path("/x/y.json"), "too odd")
    assert isinstance(err, PlanBuildError)
    assert err.code == ExitCode.BLOCKED


def test_tool_output_and_log_lines_nested_too_deep_are_skipped_not_a_crash(tmp_path: Path) -> None:
    from plan_build.core import codexusage
    from plan_build.dispatch import telemetry
    from plan_build.review import coderabbit

    deep = '{"a":' + DEEP + "}"
    stream = tmp_path / "events.jsonl"
    stream.write_text(deep + '\n{"type": "done"}\n')
    assert list(codexusage.events(stream)) == [{"type": "done"}]
    assert telemetry.parse_file(stream).unparsable == 1
    assert coderabbit._json_lines(deep) is None
    assert telemetry.parse_events(deep + "\n").unparsable == 1
    log = telemetry.log_path(tmp_path)
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(deep + "\n")
    assert telemetry.read(tmp_path) == ([], 1)


@pytest.mark.parametrize(
    "content", [DEEP.encode(), b"{", b"\xff\xfe", b"[]", b'{"id": "other"}'], ids=str
)
def test_every_unusable_workflow_file_is_a_state_file_error(tmp_path: Path, content: bytes) -> None:
    """The one type a listing of review folders can catch to skip one broken folder."""
    from plan_build.review import workflowfile
    from plan_build.review.layout import WorkflowDir

    wdir = WorkflowDir(tmp_path, "wf-1")
    wdir.workflow_json.parent.mkdir(parents=True)
    wdir.workflow_json.write_bytes(content)
    with pytest.raises(fsutil.StateFileError) as info:
        workflowfile.load(wdir)
    assert info.value.path == wdir.workflow_json
