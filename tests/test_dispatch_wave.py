"""`plan-build dispatch --wave`: ready tasks side by side, each in its own worktree.

Codex is the stub on PATH (it edits files in its cwd, the task's worktree); verification is a
real command (grep) run in that worktree; the results come back into the user's work tree.
"""

from __future__ import annotations

import json
from pathlib import Path

from plan_build.dispatch import taskfile, waveplan
from tests.support.dispatching import status_of
from tests.support.gitcmd import git
from tests.support.stubs import Stubs
from tests.support.waves import codex_for, make_wave_plan, task, wave_dirs, worktree_list

DEGRADED = {"PLAN_BUILD_MEMORY_MODE": "degraded"}


def three_tasks() -> list[str]:
    return [
        task("TASK-002", "src/a.py", "grep -q A-DONE src/a.py"),
        task("TASK-003", "src/b.py", "grep -q B-DONE src/b.py"),
        task("TASK-004", "src/a.py", "grep -q A-AGAIN src/a.py"),  # overlaps TASK-002
        task("TASK-005", "src/c.py", "true", deps="TASK-002"),  # waits for TASK-002
    ]


# ----------------------------------------------------------------------------- the plan


def test_the_dry_run_names_the_wave_and_why_the_others_wait(repo: Path, cli) -> None:
    tasks_md = make_wave_plan(repo, three_tasks())
    before = tasks_md.read_bytes()

    r = cli("dispatch", "--wave", "--dry-run", "--json", cwd=repo, env=DEGRADED)

    assert r.code == 0, r.stderr
    plan = json.loads(r.stdout)["plan"]
    assert plan["run"] == ["TASK-002", "TASK-003"]
    (later,) = plan["later"]
    assert later["task"] == "TASK-004"
    assert "overlaps TASK-002's `src/a.py`" in later["why"]
    (waiting,) = plan["waiting"]
    assert waiting == {"task": "TASK-005", "why": "waits for TASK-002 (Pending) to be Complete"}
    assert "next wave: TASK-004: its scope `src/a.py` overlaps TASK-002's" in r.stderr
    assert tasks_md.read_bytes() == before  # a dry run changes nothing
    assert wave_dirs(repo) == []


def test_scope_patterns_overlap_when_some_path_could_match_both() -> None:
    overlap = waveplan.entries_overlap
    assert overlap("src/audit", "src/audit/page.py")  # a directory covers what is inside
    assert overlap("src/*.py", "src/new.py")  # a file the task may create
    assert overlap("tests/**", "tests/unit/test_x.py")
    assert overlap("docs/**/x.md", "docs/a/b/x.md")
    assert not overlap("src/a.py", "src/b.py")
    assert not overlap("src/*.py", "tests/test_a.py")
    assert not overlap("src/api/*.py", "src/web/view.py")


def test_the_jobs_bound_splits_a_wave(repo: Path, cli) -> None:
    make_wave_plan(
        repo,
        [
            task("TASK-002", "src/a.py", "true"),
            task("TASK-003", "src/b.py", "true"),
            task("TASK-004", "src/c.py", "true"),
        ],
    )
    r = cli("dispatch", "--wave", "--jobs", "2", "--dry-run", "--json", cwd=repo, env=DEGRADED)
    plan = json.loads(r.stdout)["plan"]
    assert plan["run"] == ["TASK-002", "TASK-003"]
    assert plan["later"] == [{"task": "TASK-004", "why": "the wave is full (--jobs 2)"}]

    bad = cli("dispatch", "--wave", "--jobs", "9", cwd=repo, env=DEGRADED)
    assert bad.code == 2
    assert "--jobs 9 is out of range" in bad.stderr
    both = cli("dispatch", "--wave", "TASK-002", cwd=repo, env=DEGRADED)
    assert both.code == 2
    assert "it takes no task id" in both.stderr


# ----------------------------------------------------------------------------- a wave


def test_two_tasks_run_side_by_side_and_both_results_land(repo: Path, stubs: Stubs, cli) -> None:
    tasks_md = make_wave_plan(repo, three_tasks())
    # the user's intended change (uncommitted) is what the tasks start from
    (repo / "src" / "d.py").write_text("d1\nuser edit\n")
    codex_for(stubs, "task-002", {"src/a.py": "a1\nA-DONE\na3\na4\na5\na6\n"}, sleep=1)
    codex_for(stubs, "task-003", {"src/b.py": "B-DONE\n"}, sleep=1)

    r = cli("dispatch", "--wave", "--json", cwd=repo, env=DEGRADED)

    assert r.code == 0, r.stderr
    out = json.loads(r.stdout)
    assert [(t["task"], t["status"], t["outcome"]) for t in out["tasks"]] == [
        ("TASK-002", "Review", "applied"),
        ("TASK-003", "Review", "applied"),
    ]
    assert (repo / "src" / "a.py").read_text() == "a1\nA-DONE\na3\na4\na5\na6\n"
    assert (repo / "src" / "b.py").read_text() == "B-DONE\n"
    assert (repo / "src" / "d.py").read_text() == "d1\nuser edit\n"
    assert status_of(tasks_md, "TASK-002") == "Review"
    assert status_of(tasks_md, "TASK-003") == "Review"
    assert status_of(tasks_md, "TASK-004") == "Pending"
    text = tasks_md.read_text()
    assert text.count("Applied to your work tree from the wave's worktree: 1 file(s)") == 2
    # the user's index is untouched: nothing staged
    assert git(repo, "diff", "--cached", "--name-only") == ""
    # each Codex ran in its own worktree, which started from the user's work tree
    runs = [c for c in stubs.calls("codex") if c["argv"][:1] == ["exec"]]
    cwds = {c["cwd"] for c in runs}
    assert len(cwds) == 2
    assert all("/.git/plan-build/worktrees/" in c for c in cwds)
    # the worktrees are gone, and git knows nothing of them any more
    assert wave_dirs(repo) == []
    assert worktree_list(repo) == [str(repo)]
    assert not list((repo / ".git" / "plan-build" / "dispatch" / "waves").glob("*.json"))


def test_the_codex_runs_overlap_in_time(repo: Path, stubs: Stubs, cli) -> None:
    make_wave_plan(repo, three_tasks())
    # each Codex waits until the other has started: only side by side can both finish
    marks = stubs.home
    codex_for(
        stubs,
        "task-002",
        {"src/a.py": "A-DONE\n", str(marks / "started-2"): "x"},
        wait_for=str(marks / "started-3"),
        wait_timeout=15,
    )
    codex_for(
        stubs,
        "task-003",
        {"src/b.py": "B-DONE\n", str(marks / "started-3"): "x"},
        wait_for=str(marks / "started-2"),
        wait_timeout=15,
    )
    r = cli("dispatch", "--wave", "--json", cwd=repo, env=DEGRADED)
    assert r.code == 0, r.stderr
    assert [t["outcome"] for t in json.loads(r.stdout)["tasks"]] == ["applied", "applied"]


def test_a_result_that_meets_the_users_edit_stays_in_review_with_the_conflict_named(
    repo: Path, stubs: Stubs, cli
) -> None:
    tasks_md = make_wave_plan(repo, three_tasks())
    user_file = repo / "src" / "a.py"
    # while Codex runs, the user edits line 2 of src/a.py; Codex edits line 2 too
    codex_for(
        stubs,
        "task-002",
        {"src/a.py": "a1\nA-DONE\na3\na4\na5\na6\n"},
        run=["sh", "-c", f"printf 'a1\\nUSER\\na3\\na4\\na5\\na6\\n' > {user_file}"],
    )
    codex_for(stubs, "task-003", {"src/b.py": "B-DONE\n"})

    r = cli("dispatch", "--wave", "--json", cwd=repo, env=DEGRADED)

    assert r.code == 6, r.stderr
    by_task = {t["task"]: t for t in json.loads(r.stdout)["tasks"]}
    assert by_task["TASK-002"]["status"] == "Review"
    assert by_task["TASK-002"]["outcome"] == "conflict"
    assert (
        "`src/a.py`: TASK-002's edit of line 2 meets your edit of line 2"
        in (by_task["TASK-002"]["why"])
    )
    assert by_task["TASK-003"]["outcome"] == "applied"
    assert user_file.read_text() == "a1\nUSER\na3\na4\na5\na6\n"  # the user's edit stands
    assert (repo / "src" / "b.py").read_text() == "B-DONE\n"
    assert status_of(tasks_md, "TASK-002") == "Review"
    assert "Not applied to your work tree" in tasks_md.read_text()
    kept = Path(by_task["TASK-002"]["worktree"])
    assert (kept / "src" / "a.py").read_text() == "a1\nA-DONE\na3\na4\na5\na6\n"
    assert [p.name for p in wave_dirs(repo)] == ["TASK-002"]
    listed = cli("tasks", cwd=repo, env=DEGRADED)
    assert f"wave worktree kept: TASK-002 (conflict) · {kept}" in listed.stderr
    assert cli("baseline", cwd=repo, env=DEGRADED).code == 0
    st = cli("status", "--json", cwd=repo, env=DEGRADED)
    assert json.loads(st.stdout)["tasks"]["kept_worktrees"] == [
        {"task": "TASK-002", "state": "conflict", "path": str(kept)}
    ]


def test_edits_apart_from_the_users_are_both_kept(repo: Path, stubs: Stubs, cli) -> None:
    make_wave_plan(repo, three_tasks())
    user_file = repo / "src" / "a.py"
    codex_for(
        stubs,
        "task-002",
        {"src/a.py": "a1\nA-DONE\na3\na4\na5\na6\n"},
        run=["sh", "-c", f"printf 'a1\\na2\\na3\\na4\\nUSER\\na6\\n' > {user_file}"],
    )
    codex_for(stubs, "task-003", {"src/b.py": "B-DONE\n"})
    r = cli("dispatch", "--wave", cwd=repo, env=DEGRADED)
    assert r.code == 0, r.stderr
    assert user_file.read_text() == "a1\nA-DONE\na3\na4\nUSER\na6\n"


def test_a_task_out_of_scope_is_blocked_its_worktree_kept_and_nothing_applied(
    repo: Path, stubs: Stubs, cli
) -> None:
    tasks_md = make_wave_plan(repo, three_tasks())
    codex_for(stubs, "task-002", {"src/a.py": "A-DONE\n", "src/c.py": "sneaky\n"})
    codex_for(stubs, "task-003", {"src/b.py": "B-DONE\n"})
    r = cli("dispatch", "--wave", "--json", cwd=repo, env=DEGRADED)
    assert r.code == 6, r.stderr
    by_task = {t["task"]: t for t in json.loads(r.stdout)["tasks"]}
    assert (by_task["TASK-002"]["status"], by_task["TASK-002"]["reason"]) == ("Blocked", "scope")
    assert by_task["TASK-003"]["outcome"] == "applied", r.stderr
    assert (repo / "src" / "a.py").read_text().startswith("a1\n")  # nothing came back
    assert (repo / "src" / "c.py").read_text() == "c1\n"
    assert (repo / "src" / "b.py").read_text() == "B-DONE\n"
    assert status_of(tasks_md, "TASK-002") == "Blocked"
    assert [p.name for p in wave_dirs(repo)] == ["TASK-002"]
    # the blocked task's worktree is named in the summary; a new wave does not resume it
    assert "worktree kept" in r.stderr
    again = cli("dispatch", "--wave", "--dry-run", "--json", cwd=repo, env=DEGRADED)
    assert json.loads(again.stdout)["plan"]["run"] == ["TASK-004"]
    # the next wave runs; the blocked task's worktree stays listed until it is removed
    codex_for(stubs, "task-004", {"src/a.py": "A-AGAIN\n"})
    assert cli("dispatch", "--wave", cwd=repo, env=DEGRADED).code == 0
    assert (repo / "src" / "a.py").read_text() == "A-AGAIN\n"
    listed = cli("tasks", cwd=repo, env=DEGRADED)
    assert "wave worktree kept: TASK-002 (blocked)" in listed.stderr
    git(repo, "worktree", "remove", "--force", str(wave_dirs(repo)[0]))
    assert "wave worktree kept" not in cli("tasks", cwd=repo, env=DEGRADED).stderr


def test_a_single_dispatch_in_progress_stops_a_wave(repo: Path, stubs: Stubs, cli) -> None:
    tasks_md = make_wave_plan(repo, three_tasks())
    text = tasks_md.read_text().replace("Status: Pending", "Status: In Progress", 1)
    tasks_md.write_text(text)
    r = cli("dispatch", "--wave", cwd=repo, env=DEGRADED)
    assert r.code == 2
    assert "TASK-002 is In Progress outside a wave" in r.stderr


def test_several_in_progress_tasks_are_a_warning_not_an_error() -> None:
    text = (
        "# T\n\n"
        + task("TASK-002", "a", "true", status="In Progress")
        + task("TASK-003", "b", "true", status="In Progress")
    )
    tf = taskfile.parse(text)
    assert not [p for p in tf.errors if "In Progress" in p.message]


# ----------------------------------------------------------------------------- progress

LIVE_EVENT = json.dumps({"type": "item.started", "item": {"type": "command_execution"}})


def test_off_a_terminal_each_running_task_gets_a_progress_line(
    repo: Path, stubs: Stubs, cli
) -> None:
    make_wave_plan(repo, three_tasks())
    for marker, path, text in (
        ("task-002", "src/a.py", "A-DONE\n"),
        ("task-003", "src/b.py", "B-DONE\n"),
    ):
        # Codex prints an event, then works a while before it ends
        codex_for(stubs, marker, {path: text}, run=["sh", "-c", f"echo '{LIVE_EVENT}'"], sleep=2.5)
    env = {**DEGRADED, "PLAN_BUILD_HEARTBEAT_SEC": "1"}
    r = cli("dispatch", "--wave", cwd=repo, env=env)
    assert r.code == 0, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("  … TASK-")]
    for tid in ("TASK-002", "TASK-003"):
        mine = [ln for ln in lines if ln.startswith(f"  … {tid} ")]
        assert mine, r.stderr
        # state, elapsed, and the last event Codex printed while it still ran
        assert any(
            "attempt 1 (codex) · " in ln and "· item.started (command_execution)" in ln
            for ln in mine
        ), mine


def test_stdout_lines_are_told_as_they_come_and_returned_whole() -> None:
    import sys
    import time

    from plan_build.core import proc

    seen: list[tuple[str, float]] = []
    code = "import sys, time\nprint('one', flush=True)\ntime.sleep(1)\nprint('two')"
    started = time.monotonic()
    done = proc.run(
        [sys.executable, "-c", code],
        timeout=30,
        on_line=lambda ln: seen.append((ln, time.monotonic() - started)),
    )
    assert done.stdout == "one\ntwo\n"
    assert [ln for ln, _ in seen] == ["one\n", "two\n"]
    assert seen[0][1] < done.seconds - 0.5  # the first line came before the command ended


def test_event_labels_are_read_tolerantly() -> None:
    from plan_build.dispatch.waveprogress import event_label

    assert event_label('{"type": "turn.started"}\n') == "turn.started"
    assert event_label(LIVE_EVENT) == "item.started (command_execution)"
    for junk in ("", "not json", "[1]", '{"type": 3}', "{" * 5000, '{"type": "a\\u001b[2J"}'):
        label = event_label(junk)
        assert label is None or "\x1b" not in label


def test_a_wave_tasks_prompt_names_the_tasks_running_beside_it(
    repo: Path, stubs: Stubs, cli
) -> None:
    """Issue 38 item 5: TASK-003 runs beside TASK-002, so it is in flight, never next."""
    make_wave_plan(repo, three_tasks())
    codex_for(stubs, "task-002", {"src/a.py": "A-DONE\n"})
    codex_for(stubs, "task-003", {"src/b.py": "B-DONE\n"})

    assert cli("dispatch", "--wave", cwd=repo, env=DEGRADED).code == 0

    runs = [c["argv"][-1] for c in stubs.calls("codex") if c["argv"][:1] == ["exec"]]
    (two,) = [p for p in runs if "(task-002)" in p]
    (three,) = [p for p in runs if "(task-003)" in p]
    assert "- In flight: TASK-003 Work on src/b.py" in two
    assert "- Next after this task: TASK-004 Work on src/a.py" in two
    assert "- In flight: TASK-002 Work on src/a.py" in three
    assert "Next after this task: TASK-003" not in two


def test_the_edges_of_the_wave_command(repo: Path, tmp_path: Path, stubs: Stubs, cli) -> None:
    """Issue 38 item 8."""
    make_wave_plan(repo, [task("TASK-002", "src/a.py", "true", status="Review")])
    zero = cli("dispatch", "--wave", "--jobs", "0", cwd=repo, env=DEGRADED)
    assert zero.code == 2
    assert "--jobs 0 is out of range" in zero.stderr
    word = cli("dispatch", "--wave", "--jobs", "abc", cwd=repo, env=DEGRADED)
    assert word.code == 2
    assert "--jobs must be a whole number (got 'abc')" in word.stderr
    assert "--jobs 0" not in word.stderr
    alone = cli("dispatch", "--jobs", "2", cwd=repo, env=DEGRADED)
    assert alone.code == 2
    assert "--jobs works with --wave" in alone.stderr
    assert "needs TASK-ID" not in alone.stderr

    # nothing is ready: no wave id, no pinned recipe, no lock, no record
    state = repo / ".git" / "plan-build"
    none = cli("dispatch", "--wave", cwd=repo, env=DEGRADED)
    assert none.code == 0, none.stderr
    assert "no task is ready to run" in none.stderr
    assert "plan-build: wave " not in none.stderr
    assert not (state / "recipe.json").exists()
    assert not (state / "dispatch" / "waves").exists()

    # a repository without a commit is refused before anything is planned or written
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    (empty / "TASKS.md").write_text((repo / "TASKS.md").read_text())
    for args in (("--dry-run",), ()):
        r = cli("dispatch", "--wave", *args, cwd=empty, env=DEGRADED)
        assert r.code == 2
        assert "a wave needs a commit" in r.stderr
        assert "runs now" not in r.stderr
    assert not (empty / ".git" / "plan-build").exists()
    assert git(empty, "count-objects").startswith("0 objects")
