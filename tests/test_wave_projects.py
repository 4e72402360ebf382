"""Waves on real project shapes (issue 38, items 1 and 9): a wave's worktrees can run the
project's checks when they need what git ignores or does not check out.

Small generated projects: a Python one whose check runs `.venv/bin/python` importing a module
that lives only in the gitignored `.venv` (`.worktreeinclude`), a Node-shaped one whose check
is a script in `node_modules/.bin` (linked through Claude's `worktree.symlinkDirectories`), one
whose check reads a gitignored `.env` (`.worktreeinclude`), one with a submodule. Codex is the
stub; every check is a real command run in the task's worktree.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.support.dispatching import status_of
from tests.support.gitcmd import git
from tests.support.stubs import Stubs
from tests.support.waves import codex_for, make_wave_plan, task, wave_dirs, worktree_list

DEGRADED = {"PLAN_BUILD_MEMORY_MODE": "degraded"}


def _script(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)


def python_project(repo: Path) -> None:
    """`.venv/bin/python` runs python3 with `.venv/site` on its path (where `dep` lives)."""
    _script(
        repo / ".venv" / "bin" / "python",
        '#!/bin/sh\nPYTHONPATH="$(dirname "$0")/../site" exec python3 "$@"\n',
    )
    (repo / ".venv" / "site").mkdir(parents=True)
    (repo / ".venv" / "site" / "dep.py").write_text("VALUE = 'A-DONE'\n")


def node_project(repo: Path) -> None:
    """A test runner that exists only in node_modules (no npm needed)."""
    _script(
        repo / "node_modules" / ".bin" / "check",
        '#!/bin/sh\ngrep -q B-DONE "$1"\n',
    )


def submodule(repo: Path, tmp: Path) -> None:
    lib = tmp / "libsrc"
    lib.mkdir()
    git(lib, "init", "-q")
    (lib / "lib.txt").write_text("LIB-VALUE\n")
    git(lib, "add", "lib.txt")
    git(lib, "commit", "-q", "-m", "lib")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "lib")
    git(repo, "commit", "-q", "-m", "submodule")


def four_shapes(repo: Path, tmp: Path) -> Path:
    (repo / ".gitignore").write_text(".venv/\nnode_modules/\n.env\n")
    (repo / ".worktreeinclude").write_text(".venv/\n.env\n")
    (repo / ".claude").mkdir()
    (repo / ".claude" / "settings.json").write_text(
        json.dumps({"worktree": {"symlinkDirectories": ["node_modules"]}})
    )
    submodule(repo, tmp)
    tasks = [
        task(
            "TASK-002",
            "src/a.py",
            ".venv/bin/python -c \"import dep; assert dep.VALUE in open('src/a.py').read()\"",
        ),
        task("TASK-003", "src/b.py", "node_modules/.bin/check src/b.py"),
        task("TASK-004", "src/c.py", "sh -c '. ./.env && grep -q \"$WANT\" src/c.py'"),
        task("TASK-005", "src/d.py", "sh -c 'grep -q LIB-VALUE lib/lib.txt && grep -q D src/d.py'"),
    ]
    tasks_md = make_wave_plan(repo, tasks)
    python_project(repo)
    node_project(repo)
    (repo / ".env").write_text("WANT=C-DONE\n")
    return tasks_md


def test_a_wave_of_four_project_shapes_verifies_green_in_every_worktree(
    repo: Path, tmp_path: Path, stubs: Stubs, cli
) -> None:
    tasks_md = four_shapes(repo, tmp_path)
    codex_for(stubs, "task-002", {"src/a.py": "A-DONE\n"})
    codex_for(stubs, "task-003", {"src/b.py": "B-DONE\n"})
    codex_for(stubs, "task-004", {"src/c.py": "C-DONE\n"})
    codex_for(stubs, "task-005", {"src/d.py": "D\n"})

    plan = cli("dispatch", "--wave", "--jobs", "4", "--dry-run", "--json", cwd=repo, env=DEGRADED)
    assert json.loads(plan.stdout)["plan"]["warnings"] == []  # everything is brought in

    r = cli("dispatch", "--wave", "--jobs", "4", "--json", cwd=repo, env=DEGRADED)

    assert r.code == 0, r.stderr
    out = json.loads(r.stdout)
    assert [(t["task"], t["status"], t["outcome"]) for t in out["tasks"]] == [
        ("TASK-002", "Review", "applied"),
        ("TASK-003", "Review", "applied"),
        ("TASK-004", "Review", "applied"),
        ("TASK-005", "Review", "applied"),
    ]
    # one Codex run each: every check passed the first time, in its worktree
    assert len([c for c in stubs.calls("codex") if c["argv"][:1] == ["exec"]]) == 4
    for tid in ("TASK-002", "TASK-003", "TASK-004", "TASK-005"):
        assert status_of(tasks_md, tid) == "Review"
    assert (repo / "src" / "a.py").read_text() == "A-DONE\n"
    # the links, copies and the submodule's clone never come back as changes
    assert git(repo, "status", "--porcelain") == (
        " M TASKS.md\n M src/a.py\n M src/b.py\n M src/c.py\n M src/d.py\n"
    )
    assert (repo / "node_modules").is_dir()
    assert (repo / "node_modules" / ".bin" / "check").is_file()  # removing the link kept it
    assert wave_dirs(repo) == []  # the worktrees (a submodule's clone in each) are gone
    assert worktree_list(repo) == [str(repo)]
    assert not (repo / "node_modules").is_symlink()


def test_without_any_of_it_the_plan_warns_and_the_failure_is_the_environments(
    repo: Path, stubs: Stubs, cli
) -> None:
    (repo / ".gitignore").write_text(".venv/\n")
    tasks_md = make_wave_plan(
        repo,
        [
            task("TASK-002", "src/a.py", ".venv/bin/python -c pass"),
            task("TASK-003", "src/b.py", "true"),
        ],
    )
    python_project(repo)
    codex_for(stubs, "task-002", {"src/a.py": "A-DONE\n"})
    codex_for(stubs, "task-003", {"src/b.py": "B-DONE\n"})

    plan = cli("dispatch", "--wave", "--dry-run", "--json", cwd=repo, env=DEGRADED)

    assert plan.code == 0, plan.stderr
    (warning,) = json.loads(plan.stdout)["plan"]["warnings"]
    assert warning["task"] == "TASK-002"
    assert "`.venv/bin/python`, which git ignores" in warning["why"]
    assert ".worktreeinclude" in warning["why"]
    assert "warning: TASK-002: its verification uses `.venv/bin/python`" in plan.stderr

    r = cli("dispatch", "--wave", "--json", cwd=repo, env=DEGRADED)

    by_task = {t["task"]: t for t in json.loads(r.stdout)["tasks"]}
    assert by_task["TASK-002"]["reason"] == "environment"
    assert by_task["TASK-003"]["outcome"] == "applied"
    text = tasks_md.read_text()
    assert "the environment's failure, not the task's" in text
    assert "revise the architecture" not in text
    kept = Path(by_task["TASK-002"]["worktree"])
    assert (kept / "src" / "a.py").read_text() == "A-DONE\n"  # the result is kept
    # and it can be dispatched alone now (not refused as "has not changed")
    alone = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)
    assert "has not changed" not in alone.stderr
    assert alone.code == 0, alone.stderr
    assert status_of(tasks_md, "TASK-002") == "Review"


def test_a_write_through_a_linked_folder_is_seen_by_the_scope_check(
    repo: Path, stubs: Stubs, cli
) -> None:
    (repo / ".gitignore").write_text("node_modules/\n")
    (repo / ".claude").mkdir()
    (repo / ".claude" / "settings.json").write_text(
        json.dumps({"worktree": {"symlinkDirectories": ["node_modules", "../escape"]}})
    )
    make_wave_plan(repo, [task("TASK-002", "src/a.py", "true")])
    node_project(repo)
    codex_for(stubs, "task-002", {"src/a.py": "A\n", "node_modules/evil.js": "x\n"})

    r = cli("dispatch", "--wave", "--json", cwd=repo, env=DEGRADED)

    (t,) = json.loads(r.stdout)["tasks"]
    assert t["reason"] == "scope", r.stderr
    assert (repo / "node_modules" / "evil.js").exists()  # it landed in the user's folder
    assert "`node_modules/evil.js`" in (repo / "TASKS.md").read_text()
    assert not (repo.parent / "escape").exists()


def _setup_config(repo: Path, script: str) -> None:
    (repo / ".plan-build.yaml").write_text(
        f"worktree:\n  setup: [sh, -c, {json.dumps(script)}]\n  timeout: 20\n"
    )


def test_the_setup_command_runs_in_each_new_worktree_with_its_facts(
    repo: Path, stubs: Stubs, cli
) -> None:
    (repo / ".gitignore").write_text(".setup\n")
    _setup_config(
        repo,
        'printf "%s|%s|%s|%s" "$PLAN_BUILD_ROOT" "$PLAN_BUILD_WORKTREE" "$PLAN_BUILD_TASK" '
        '"$PLAN_BUILD_PORT" > .setup; echo set up',
    )
    make_wave_plan(
        repo,
        [
            task("TASK-002", "src/a.py", "test -f .setup"),
            task("TASK-003", "src/b.py", "test -f .setup"),
        ],
    )
    seen = stubs.home / "seen"
    codex_for(stubs, "task-002", {"src/a.py": "A\n"}, run=["sh", "-c", f"cat .setup >> {seen}-2"])
    codex_for(stubs, "task-003", {"src/b.py": "B\n"}, run=["sh", "-c", f"cat .setup >> {seen}-3"])

    r = cli("dispatch", "--wave", "--json", cwd=repo, env=DEGRADED)

    assert r.code == 0, r.stderr
    ports = set()
    for n, tid in (("2", "TASK-002"), ("3", "TASK-003")):
        root, wt, task_id, port = Path(f"{seen}-{n}").read_text().split("|")
        assert root == str(repo)
        assert "/.git/plan-build/worktrees/" in wt
        assert wt.endswith(tid)
        assert task_id == tid
        ports.add(int(port))
    assert len(ports) == 2
    assert all(p > 0 for p in ports)
    assert not (repo / ".setup").exists()  # it ran in the worktrees, not in the user's tree


def test_a_failing_setup_blocks_the_task_before_any_codex_run(
    repo: Path, stubs: Stubs, cli
) -> None:
    _setup_config(repo, "echo installing deps; echo 'npm ERR! missing lockfile' >&2; exit 3")
    tasks_md = make_wave_plan(repo, [task("TASK-002", "src/a.py", "true")])
    codex_for(stubs, "task-002", {"src/a.py": "A\n"})

    r = cli("dispatch", "--wave", "--json", cwd=repo, env=DEGRADED)

    assert r.code == 6
    (t,) = json.loads(r.stdout)["tasks"]
    assert (t["status"], t["reason"]) == ("Blocked", "setup_failed")
    assert [c for c in stubs.calls("codex") if c["argv"][:1] == ["exec"]] == []
    assert status_of(tasks_md, "TASK-002") == "Blocked"
    text = tasks_md.read_text()
    assert "the worktree setup command exited 3" in text
    assert "npm ERR! missing lockfile" in text
    assert "all of it in `.git/plan-build/dispatch/waves/setup/" in text  # no absolute path
    assert str(repo) not in text
    logs = list((repo / ".git" / "plan-build" / "dispatch" / "waves" / "setup").glob("*.log"))
    assert len(logs) == 1
    assert "installing deps" in logs[0].read_text()
    assert cli("baseline", cwd=repo, env=DEGRADED).code == 0
    st = cli("status", cwd=repo, env=DEGRADED)
    assert "setup_failed" in st.stderr
    assert "npm ERR! missing lockfile" in st.stderr


def test_a_bad_worktree_section_is_refused_with_its_line(repo: Path, cli) -> None:
    (repo / ".plan-build.yaml").write_text("worktree:\n  setup: make setup\n")
    make_wave_plan(repo, [task("TASK-002", "src/a.py", "true")])
    r = cli("dispatch", "--wave", "--dry-run", cwd=repo, env=DEGRADED)
    assert r.code == 2
    assert "worktree.setup must be a list" in r.stderr
    assert ".plan-build.yaml:2:" in r.stderr
    assert os.path.exists(repo / "TASKS.md")


def test_in_scope_edits_of_ignored_files_come_back_or_stay_kept_never_lost(
    repo: Path, stubs: Stubs, cli
) -> None:
    """Issue 38 item 3: a task whose scope holds ignored files (`cfg/*.env`)."""
    (repo / ".gitignore").write_text("*.env\n")
    (repo / ".worktreeinclude").write_text("cfg/*.env\n")
    (repo / "cfg").mkdir()
    tasks_md = make_wave_plan(repo, [task("TASK-002", "cfg/**", "test -f cfg/new.env")])
    (repo / "cfg" / "local.env").write_text("A=1\n")
    (repo / "cfg" / "mine.env").write_text("M=1\n")
    user_mine = repo / "cfg" / "mine.env"
    codex_for(
        stubs,
        "task-002",
        {"cfg/new.env": "N=1\n", "cfg/local.env": "A=2\n", "cfg/mine.env": "M=task\n"},
        # meanwhile the user edits mine.env in their own tree
        run=["sh", "-c", f"sleep 0.05; printf 'M=user\\n' > {user_mine}"],
    )

    r = cli("dispatch", "--wave", "--json", cwd=repo, env=DEGRADED)

    assert r.code == 0, r.stderr
    (t,) = json.loads(r.stdout)["tasks"]
    assert t["outcome"] == "applied"
    assert (repo / "cfg" / "new.env").read_text() == "N=1\n"  # new: brought back
    assert (repo / "cfg" / "local.env").read_text() == "A=2\n"  # unchanged by you: replaced
    assert user_mine.read_text() == "M=user\n"  # yours changed too: yours stands
    kept = Path(t["worktree"])
    assert (kept / "cfg" / "mine.env").read_text() == "M=task\n"  # and the task's is kept
    text = tasks_md.read_text()
    assert "brought back too: `cfg/local.env`, `cfg/new.env`" in text
    assert "NOT brought back" in text
    assert "`cfg/mine.env`" in text
    listed = cli("tasks", cwd=repo, env=DEGRADED)
    assert f"wave worktree kept: TASK-002 (ignored_kept) · {kept}" in listed.stderr
