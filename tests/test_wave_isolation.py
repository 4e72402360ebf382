"""A wave task cannot move the user's refs, and its Codex runs apart from the others
(issue 38, items 4 and 7; ADR 0197)."""

from __future__ import annotations

import json
from pathlib import Path

from plan_build.core.gitrepo import discover
from plan_build.dispatch import waveisolation
from tests.support.dispatching import status_of
from tests.support.gitcmd import git
from tests.support.stubs import Stubs
from tests.support.waves import codex_for, make_wave_plan, task

DEGRADED = {"PLAN_BUILD_MEMORY_MODE": "degraded"}

# what Codex did in a worktree whose sandbox left the common git dir writable: a commit made
# with plumbing, then the user's branch moved to it
MOVE_MAIN = (
    "sleep 1; "  # the other task's Codex has ended by then
    'c=$(git commit-tree -p HEAD -m sneaky "$(git rev-parse HEAD^{tree})") && '
    "git update-ref refs/heads/main $c"
)


def test_a_wave_task_that_moves_the_users_branch_is_blocked_git_state(
    repo: Path, stubs: Stubs, cli
) -> None:
    tasks_md = make_wave_plan(
        repo, [task("TASK-002", "src/a.py", "true"), task("TASK-003", "src/b.py", "true")]
    )
    head = git(repo, "rev-parse", "HEAD").strip()
    codex_for(stubs, "task-002", {"src/a.py": "A\n"}, run=["sh", "-c", MOVE_MAIN])
    codex_for(stubs, "task-003", {"src/b.py": "B\n"})

    r = cli("dispatch", "--wave", "--json", cwd=repo, env=DEGRADED)

    assert r.code == 6
    by_task = {t["task"]: t for t in json.loads(r.stdout)["tasks"]}
    assert (by_task["TASK-002"]["status"], by_task["TASK-002"]["reason"]) == (
        "Blocked",
        "git_state",
    )
    assert by_task["TASK-002"]["outcome"] == "blocked"  # and not applied
    assert (repo / "src" / "a.py").read_text().startswith("a1\n")
    assert by_task["TASK-003"]["outcome"] == "applied"
    assert git(repo, "rev-parse", "HEAD").strip() != head  # what Codex did is named, not undone
    assert "the repository's refs/heads/main moved from" in tasks_md.read_text()
    assert status_of(tasks_md, "TASK-002") == "Blocked"


def test_where_the_repository_is_in_the_temp_dir_codex_may_write_the_worktree_only(
    repo: Path, stubs: Stubs, cli
) -> None:
    make_wave_plan(repo, [task("TASK-002", "src/a.py", "true")])
    codex_for(stubs, "task-002", {"src/a.py": "A\n"})

    r = cli("dispatch", "--wave", cwd=repo, env=DEGRADED)

    assert r.code == 0, r.stderr
    (call,) = [c for c in stubs.calls("codex") if c["argv"][:1] == ["exec"]]
    argv = call["argv"]
    assert "sandbox_workspace_write.exclude_slash_tmp=true" in argv
    assert "sandbox_workspace_write.exclude_tmpdir_env_var=true" in argv
    roots = next(a for a in argv if a.startswith("sandbox_workspace_write.writable_roots="))
    (own_tmp,) = json.loads(roots.split("=", 1)[1])
    assert call["env"]["TMPDIR"] == own_tmp
    common = str(repo / ".git")
    assert not common.startswith(own_tmp)  # the git dir is not among Codex's writable roots
    assert own_tmp.endswith("/.TASK-002.codex/tmp")
    # Codex would refuse its sandbox helper in a home under /tmp: the user's home is kept
    assert "each task's Codex shares your Codex home" in r.stderr


def _repos(tmp_path: Path) -> tuple[Path, Path]:
    user = tmp_path / "user"
    user.mkdir()
    git(user, "init", "-q")
    (user / "f").write_text("x\n")
    git(user, "add", "f")
    git(user, "commit", "-q", "-m", "i")
    wt = user / ".git" / "plan-build" / "worktrees" / "W" / "TASK-002"
    git(user, "worktree", "add", "-q", "--detach", str(wt))
    return user, wt


def test_each_task_gets_its_own_codex_home_with_the_users_config_linked(tmp_path: Path) -> None:
    user, wt = _repos(tmp_path)
    codex_home = tmp_path / "codex-home"
    (codex_home / "sessions").mkdir(parents=True)
    (codex_home / "config.toml").write_text('model = "x"\n')
    (codex_home / "auth.json").write_text("{}")
    (codex_home / "state_5.sqlite").write_text("")
    env = {"CODEX_HOME": str(codex_home)}

    got = waveisolation.codex_setting(discover(user), discover(wt), env, None, roots=[])

    own = Path(got.env["CODEX_HOME"])
    assert own == wt.parent / ".TASK-002.codex" / "home"
    assert sorted(p.name for p in own.iterdir()) == ["auth.json", "config.toml"]
    assert (own / "config.toml").resolve() == (codex_home / "config.toml").resolve()
    assert not (own / "sessions").exists()  # its sessions are its own
    assert got.flags == []  # outside the temp dir, Codex's sandbox needs no change
    assert got.notes == []


def test_in_the_temp_dir_the_home_is_shared_and_the_sandbox_narrowed(tmp_path: Path) -> None:
    user, wt = _repos(tmp_path)
    (tmp_path / "codex-home").mkdir()
    env = {"CODEX_HOME": str(tmp_path / "codex-home")}

    got = waveisolation.codex_setting(
        discover(user), discover(wt), env, None, roots=[tmp_path.resolve()]
    )

    assert "CODEX_HOME" not in got.env
    assert got.notes
    assert "sandbox_workspace_write.exclude_slash_tmp=true" in got.flags
