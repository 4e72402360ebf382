"""`dispatch --wave` when it is stopped: Ctrl-C and SIGKILL mid-wave leave no Codex running,
TASKS.md consistent and every worktree removed or listed; a rerun resumes only the unfinished
tasks. Two waves in two worktrees of one repository run side by side."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from plan_build.dispatch import taskfile
from tests.support.dispatching import status_of
from tests.support.gitcmd import git
from tests.support.orphans import survivors
from tests.support.stubs import Stubs
from tests.support.waves import codex_for, make_wave_plan, task, wave_dirs, worktree_list
from tests.test_dispatch_misbehaviour import wait_until

DEGRADED = {"PLAN_BUILD_MEMORY_MODE": "degraded"}


def plan(repo: Path) -> Path:
    return make_wave_plan(
        repo,
        [
            task("TASK-002", "src/a.py", "grep -q A-DONE src/a.py"),
            task("TASK-003", "src/b.py", "grep -q B-DONE src/b.py"),
            task("TASK-004", "src/a.py", "true"),  # overlaps TASK-002: not in this wave
        ],
    )


def start_wave(cwd: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "plan_build", "dispatch", "--wave", "--jobs", "2", *extra],
        cwd=cwd,
        env=dict(os.environ, **DEGRADED),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def started(child: subprocess.Popen[str], stubs: Stubs) -> str:
    """Wait for both Codex runs; on failure, what the wave said."""
    if wait_until(lambda: len(codex_runs(stubs)) == 2, timeout=60):
        return ""
    child.kill()
    return child.communicate(timeout=30)[1]


def codex_runs(stubs: Stubs) -> list[dict[str, Any]]:
    return [c for c in stubs.calls("codex") if c["argv"][:1] == ["exec"]]


def hang_both(stubs: Stubs) -> None:
    """Both tasks' Codex write half their work, start a grandchild that ignores SIGTERM, and
    hang."""
    for marker, path in (("task-002", "src/a.py"), ("task-003", "src/b.py")):
        codex_for(stubs, marker, {path: "half\n"}, sleep=60, grandchild=True)


def finish_both(stubs: Stubs) -> None:
    codex_for(stubs, "task-002", {"src/a.py": "A-DONE\n"})
    codex_for(stubs, "task-003", {"src/b.py": "B-DONE\n"})


def assert_consistent(tasks_md: Path, statuses: dict[str, str]) -> None:
    tf = taskfile.read(tasks_md)
    assert not tf.errors, [p.human() for p in tf.errors]
    assert {t.id: t.status for t in tf.tasks if t.id in statuses} == statuses


def resume_and_check(repo: Path, stubs: Stubs, cli: Any, tasks_md: Path) -> None:
    finish_both(stubs)
    dry = cli("dispatch", "--wave", "--dry-run", "--json", cwd=repo, env=DEGRADED)
    assert json.loads(dry.stdout)["resumed"] is True
    assert json.loads(dry.stdout)["plan"]["run"] == ["TASK-002", "TASK-003"]
    r = cli("dispatch", "--wave", "--json", cwd=repo, env=DEGRADED)
    assert r.code == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["resumed"] is True
    assert [(t["task"], t["outcome"]) for t in out["tasks"]] == [
        ("TASK-002", "applied"),
        ("TASK-003", "applied"),
    ]
    assert (repo / "src" / "a.py").read_text() == "A-DONE\n"
    assert (repo / "src" / "b.py").read_text() == "B-DONE\n"
    # only the unfinished tasks ran: TASK-004 waits for the next wave
    assert_consistent(tasks_md, {"TASK-002": "Review", "TASK-003": "Review", "TASK-004": "Pending"})
    assert wave_dirs(repo) == []
    assert worktree_list(repo) == [str(repo)]


def test_ctrl_c_mid_wave_stops_every_codex_and_a_rerun_resumes_the_wave(
    repo: Path, stubs: Stubs, cli: Any
) -> None:
    tasks_md = plan(repo)
    hang_both(stubs)
    child = start_wave(repo, "--json")
    assert not (said := started(child, stubs)), said
    assert wait_until(lambda: len(survivors(stubs.home)) >= 2)

    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=30)

    assert child.returncode == 130, err
    stopped = json.loads(out)  # --json says where the wave stood
    assert [(t["task"], t["outcome"]) for t in stopped["tasks"]] == [
        ("TASK-002", "interrupted"),
        ("TASK-003", "interrupted"),
    ]
    assert wait_until(lambda: survivors(stubs.home) == [], timeout=10)
    assert_consistent(tasks_md, {"TASK-002": "In Progress", "TASK-003": "In Progress"})
    text = tasks_md.read_text()
    assert text.count("interrupted by Ctrl-C during attempt 1 (codex)") == 2
    # nothing came back half-done; both worktrees are kept and named for the resume
    assert (repo / "src" / "a.py").read_text().startswith("a1\n")
    assert [p.name for p in wave_dirs(repo)] == ["TASK-002", "TASK-003"]
    listed = cli("tasks", cwd=repo, env=DEGRADED)
    assert "wave worktree kept: TASK-002 (interrupted)" in listed.stderr
    assert "wave worktree kept: TASK-003 (interrupted)" in listed.stderr
    assert cli("baseline", cwd=repo, env=DEGRADED).code == 0
    st = cli("status", cwd=repo, env=DEGRADED)
    assert "in progress together (a wave): TASK-002, TASK-003" in st.stderr
    assert "plan-build dispatch --wave resumes it" in st.stderr

    resume_and_check(repo, stubs, cli, tasks_md)


def test_sigkill_mid_wave_leaves_no_codex_and_a_rerun_resumes_the_wave(
    repo: Path, stubs: Stubs, cli: Any
) -> None:
    tasks_md = plan(repo)
    hang_both(stubs)
    child = start_wave(repo)
    assert not (said := started(child, stubs)), said
    assert wait_until((stubs.home / "codex.grandchild").exists)

    child.send_signal(signal.SIGKILL)
    child.communicate(timeout=30)

    # the supervisors stop each Codex tree (the grandchildren ignore SIGTERM)
    assert wait_until(lambda: survivors(stubs.home) == [], timeout=15)
    assert_consistent(tasks_md, {"TASK-002": "In Progress", "TASK-003": "In Progress"})
    assert [p.name for p in wave_dirs(repo)] == ["TASK-002", "TASK-003"]
    listed = cli("tasks", cwd=repo, env=DEGRADED)
    assert "wave worktree kept: TASK-002 (running)" in listed.stderr

    resume_and_check(repo, stubs, cli, tasks_md)
    # the resumed dispatches went on where the dead ones stopped: attempt 2 of the same budget
    assert tasks_md.read_text().count("verified on attempt 2 of 3") == 2


ALL_FOUR = (
    'mkdir -p "$STUB_HOME/running"; touch "$STUB_HOME/running/$$"; i=0; '
    'while [ "$(ls "$STUB_HOME/running" | wc -l)" -lt 4 ] && [ $i -lt 400 ]; '
    "do sleep 0.05; i=$((i+1)); done"
)


def test_two_waves_in_two_worktrees_of_one_repository_run_side_by_side(
    repo: Path, stubs: Stubs
) -> None:
    tasks_md = plan(repo)
    other = repo.parent / "shop-b"
    git(repo, "worktree", "add", "-q", "-b", "b", str(other))
    (other / "src" / "c.py").write_text("c1\nthe other worktree's edit\n")
    # each of the four Codex runs waits until all four run at once: only side by side can
    # both waves finish
    for marker, path, text in (
        ("task-002", "src/a.py", "A-DONE\n"),
        ("task-003", "src/b.py", "B-DONE\n"),
    ):
        codex_for(stubs, marker, {path: text}, run=["sh", "-c", ALL_FOUR])

    a, b = start_wave(repo, "--json"), start_wave(other, "--json")
    out_a, err_a = a.communicate(timeout=120)
    out_b, err_b = b.communicate(timeout=120)

    assert a.returncode == 0, err_a
    assert b.returncode == 0, err_b
    assert len(list((stubs.home / "running").iterdir())) == 4
    for root, out in ((repo, out_a), (other, out_b)):
        tasks = json.loads(out)["tasks"]
        assert [(t["task"], t["outcome"]) for t in tasks] == [
            ("TASK-002", "applied"),
            ("TASK-003", "applied"),
        ]
        assert (root / "src" / "a.py").read_text() == "A-DONE\n"
        assert status_of(root / "TASKS.md", "TASK-002") == "Review"
    # each wave started from its own work tree
    assert (other / "src" / "c.py").read_text() == "c1\nthe other worktree's edit\n"
    assert (repo / "src" / "c.py").read_text() == "c1\n"
    assert sorted(worktree_list(repo)) == sorted([str(repo), str(other)])
    assert tasks_md.exists()


@pytest.mark.parametrize("state", ["running", "verified"])
def test_a_wave_killed_after_a_task_ended_applies_its_result_on_resume(
    repo: Path, stubs: Stubs, cli: Any, state: str
) -> None:
    """A kill between a task's outcome and its apply leaves the task Review and its record
    `running` (or `verified`, after the change was read): the resumed wave applies the result
    and runs no Codex again."""
    tasks_md = plan(repo)
    user_file = repo / "src" / "a.py"
    # first wave: TASK-002's result meets the user's edit, so it is kept, not applied
    codex_for(
        stubs,
        "task-002",
        {"src/a.py": "A-DONE\n"},
        run=["sh", "-c", f"printf 'USER\\n' > {user_file}"],
    )
    codex_for(stubs, "task-003", {"src/b.py": "B-DONE\n"})
    assert cli("dispatch", "--wave", cwd=repo, env=DEGRADED).code == 6
    runs_before = len(codex_runs(stubs))
    user_file.write_text("a1\na2\na3\na4\na5\na6\n")  # the user undoes the edit
    record_path = repo / ".git" / "plan-build" / "dispatch" / "waves" / "main.json"
    record = json.loads(record_path.read_text())
    record["tasks"]["TASK-002"]["state"] = state  # what a kill at that moment leaves
    record_path.write_text(json.dumps(record))

    r = cli("dispatch", "--wave", "--json", cwd=repo, env=DEGRADED)

    assert r.code == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["resumed"] is True
    assert [(t["task"], t["outcome"]) for t in out["tasks"]] == [("TASK-002", "applied")]
    assert user_file.read_text() == "A-DONE\n"
    assert len(codex_runs(stubs)) == runs_before  # no Codex ran again
    assert status_of(tasks_md, "TASK-002") == "Review"
    assert wave_dirs(repo) == []


def wave_state(repo: Path, tid: str) -> str | None:
    record = repo / ".git" / "plan-build" / "dispatch" / "waves" / "main.json"
    try:
        return json.loads(record.read_text())["tasks"][tid]["state"]
    except (OSError, ValueError, KeyError):
        return None


def test_a_stopped_wave_is_resumed_as_a_wave_never_by_one_tasks_dispatch(
    repo: Path, stubs: Stubs, cli: Any
) -> None:
    """After a SIGKILL, every screen names `dispatch --wave`; a single dispatch of a wave task
    refuses before it touches anything (it would take the other task's applied file and
    TASKS.md records for its own, and roll TASKS.md back); a finished task never runs again."""
    tasks_md = plan(repo)
    codex_for(stubs, "task-002", {"src/a.py": "A-DONE\n"})  # finishes and is applied
    codex_for(stubs, "task-003", {"src/b.py": "half\n"}, sleep=60)
    child = start_wave(repo)
    assert wait_until(lambda: status_of(tasks_md, "TASK-002") == "Review", timeout=60)
    assert wait_until(lambda: wave_state(repo, "TASK-002") == "applied", timeout=30)
    assert wait_until(lambda: len(codex_runs(stubs)) == 2, timeout=30)
    child.send_signal(signal.SIGKILL)
    child.communicate(timeout=30)
    assert wait_until(lambda: survivors(stubs.home) == [], timeout=15)
    assert status_of(tasks_md, "TASK-003") == "In Progress"
    assert cli("baseline", cwd=repo, env=DEGRADED).code == 0

    st = cli("status", "--json", cwd=repo, env=DEGRADED)
    data = json.loads(st.stdout)
    assert data["next"] == "plan-build dispatch --wave (resumes the stopped wave)"
    assert data["tasks"]["in_progress"]["wave"] is True

    before = tasks_md.read_bytes()
    alone = cli("dispatch", "TASK-003", cwd=repo, env=DEGRADED)
    assert alone.code == 2
    assert "TASK-003 belongs to a wave" in alone.stderr
    assert "plan-build dispatch --wave" in alone.stderr
    assert tasks_md.read_bytes() == before  # nothing rolled back, nothing written
    other = cli("dispatch", "TASK-004", cwd=repo, env=DEGRADED)
    assert other.code == 2
    assert "resume it with: plan-build dispatch --wave" in other.stderr  # no advice in circles
    assert tasks_md.read_bytes() == before
    assert status_of(tasks_md, "TASK-002") == "Review"

    runs = len(codex_runs(stubs))
    codex_for(stubs, "task-003", {"src/b.py": "B-DONE\n"})
    r = cli("dispatch", "--wave", "--json", cwd=repo, env=DEGRADED)
    assert r.code == 0, r.stderr
    assert [(t["task"], t["outcome"]) for t in json.loads(r.stdout)["tasks"]] == [
        ("TASK-003", "applied")
    ]
    ran = [c for c in codex_runs(stubs)[runs:]]
    assert all("(task-002)" not in " ".join(c["argv"]) for c in ran)  # never again
    assert status_of(tasks_md, "TASK-002") == "Review"
    assert status_of(tasks_md, "TASK-003") == "Review"
    assert (repo / "src" / "a.py").read_text() == "A-DONE\n"
