"""Nothing an agent does loses work (issue 37): the checkpoint hook, run as Claude runs it
(the settings' command through sh, Claude's JSON on stdin), records the work tree and the
user's index before a destructive call; `plan-build restore` then brings back every byte
(binary, CRLF under `text=auto`, modes, symlinks, NFD names, the index) without moving HEAD,
and `commit` still commits exactly the session's intended change."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import unicodedata
from pathlib import Path
from typing import Any

import pytest

from plan_build.core import checkpoint, gitrepo
from plan_build.core.errors import ExitCode
from plan_build.delivery import baseline, intended
from plan_build.startup import claudelayer
from tests.support.gitcmd import git
from tests.test_commit import do_commit, verified

LINES = "".join(f"line {i}\n" for i in range(1, 31))
NFD = unicodedata.normalize("NFD", "café-notes.txt")


def hook(repo: Path, tool: str, tool_input: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The `checkpoint` hook, exactly as the settings layer has Claude run it."""
    env = dict(os.environ)
    env[claudelayer.HOOK_ENV] = claudelayer.hook_program()
    env["CLAUDE_PROJECT_DIR"] = str(repo)
    payload = {"tool_name": tool, "tool_input": tool_input, "cwd": str(repo)}
    return subprocess.run(
        ["sh", "-c", claudelayer.hook_command("checkpoint", mode="plan")],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


def state(repo: Path) -> dict[str, Any]:
    """Every byte the user owns: files (content, mode), symlinks, the index file."""
    files: dict[str, Any] = {}
    for path in sorted(repo.rglob("*")):
        rel = path.relative_to(repo)
        if rel.parts[0] == ".git":
            continue
        if path.is_symlink():
            files[str(rel)] = ("link", os.readlink(path))
        elif path.is_file():
            files[str(rel)] = (oct(path.stat().st_mode & 0o777), path.read_bytes())
    return {"files": files, "index": (repo / ".git" / "index").read_bytes()}


@pytest.fixture
def session(repo: Path) -> Path:
    """A repository with the user's uncommitted work of every kind, a session started over it,
    and the session's own change on top."""
    (repo / ".gitattributes").write_text("*.txt text=auto\n")
    for name in ("a.txt", "b.txt", "c.txt", "gone.txt"):
        (repo / name).write_text(LINES)
    (repo / "tool.sh").write_text("#!/bin/sh\necho hi\n")
    (repo / "tool.sh").chmod(0o755)
    (repo / "data.bin").write_bytes(bytes(range(256)) * 4)
    os.symlink("a.txt", repo / "link")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "files")
    # the user's work: staged, unstaged, untracked (CRLF under text=auto, an NFD name), a mode
    (repo / "a.txt").write_text(LINES.replace("line 5\n", "USER STAGED 5\n"))
    git(repo, "add", "a.txt")
    (repo / "b.txt").write_text(LINES.replace("line 2\n", "USER UNSTAGED 2\n"))
    (repo / "notes.txt").write_bytes(b"my notes\r\nsecond line\r\n")
    (repo / NFD).write_bytes(b"\xff\x00binary\r\n")
    (repo / "data.bin").chmod(0o755)
    os.symlink("notes.txt", repo / "notes-link")
    baseline.capture(gitrepo.discover(repo), session_id="s")
    # the session's change
    (repo / "c.txt").write_text(LINES.replace("line 1\n", "SESSION 1\n"))
    (repo / "new.py").write_text("print('new')\n")
    (repo / "gone.txt").unlink()
    return repo


def intended_change(repo: Path) -> dict[str, Any]:
    r = gitrepo.discover(repo)
    return intended.compute(r, baseline.current(r, {})).as_json()


DESTRUCTIVE = {
    "git reset --hard": "git reset -q --hard",
    "git checkout -- .": "git checkout -q -- .",
    "git restore .": "git restore .",
    "git stash": "git stash -q",
    "git clean -fdx": "git clean -q -fdx",
    "a script that truncates files": "sh ../trunc.sh",
}


@pytest.mark.parametrize("command", list(DESTRUCTIVE))
def test_restore_brings_back_every_byte_after_a_destructive_command(
    session: Path, cli: Any, command: str
) -> None:
    script = 'for f in a.txt b.txt c.txt notes.txt new.py; do : > "$f"; done\n'
    (session.parent / "trunc.sh").write_text(script)  # outside the repository
    before = state(session)
    change = intended_change(session)
    head = git(session, "rev-parse", "HEAD")

    assert hook(session, "Bash", {"command": command}).returncode == 0
    subprocess.run(["sh", "-c", DESTRUCTIVE[command]], cwd=session, check=True)
    damaged = state(session)
    assert damaged != before  # the command did destroy work

    r = cli("restore", cwd=session)

    assert r.code == 0, r.stderr
    assert state(session) == before
    assert git(session, "rev-parse", "HEAD") == head  # HEAD did not move
    assert intended_change(session) == change
    verified(session)
    out = do_commit(session)
    shown = git(session, "show", "--name-status", "--format=", out.commit).split()
    assert shown == ["M", "c.txt", "D", "gone.txt", "A", "new.py"]
    assert (session / "b.txt").read_text() == LINES.replace("line 2\n", "USER UNSTAGED 2\n")
    assert (session / "notes.txt").read_bytes() == b"my notes\r\nsecond line\r\n"


def test_a_write_over_a_users_edit_needs_force_and_keeps_the_agents_version(
    session: Path, cli: Any
) -> None:
    before = state(session)
    assert hook(session, "Write", {"file_path": str(session / "b.txt")}).returncode == 0
    (session / "b.txt").write_text("the agent's rewrite\n")

    refused = cli("restore", cwd=session)

    assert refused.code == ExitCode.BLOCKED
    assert "would overwrite work done since it: b.txt" in refused.stderr
    assert "--force" in refused.stderr
    assert (session / "b.txt").read_text() == "the agent's rewrite\n"  # nothing written
    dry = cli("restore", "1", "--dry-run", cwd=session)
    assert dry.code == 0
    assert (session / "b.txt").read_text() == "the agent's rewrite\n"

    r = cli("restore", "--force", cwd=session)

    assert r.code == 0, r.stderr
    assert state(session) == before
    # the agent's version was checkpointed first: restoring that one brings it back
    kept = [c for c in checkpoint.listed(gitrepo.discover(session)) if "restore" in str(c.meta)]
    assert kept
    back = cli("restore", kept[0].name, "b.txt", "--force", cwd=session)
    assert back.code == 0, back.stderr
    assert (session / "b.txt").read_text() == "the agent's rewrite\n"
    assert (session / "notes.txt").read_bytes() == b"my notes\r\nsecond line\r\n"


def test_restore_by_number_takes_the_checkpoint_the_listing_showed(session: Path, cli: Any) -> None:
    """The numbers `checkpoints` printed stay valid although restore checkpoints the damage
    first (a new newest checkpoint, which would otherwise move every number by one)."""
    before = state(session)
    assert hook(session, "Bash", {"command": "make"}).returncode == 0
    (session / "b.txt").write_text("")
    assert hook(session, "Write", {"file_path": "c.txt"}).returncode == 0
    (session / "c.txt").write_text("")
    listed = json.loads(cli("checkpoints", "--json", cwd=session).stdout)
    [oldest] = [row for row in listed if row["number"] == len(listed)]

    r = cli("restore", str(oldest["number"]), "--force", cwd=session)

    assert r.code == 0, r.stderr
    assert oldest["name"] in r.stderr
    assert state(session) == before


def test_restore_of_some_paths_leaves_the_others(session: Path, cli: Any) -> None:
    assert hook(session, "Bash", {"command": "rm"}).returncode == 0
    (session / "notes.txt").unlink()
    (session / "c.txt").unlink()

    r = cli("restore", "notes.txt", cwd=session)

    assert r.code == 0, r.stderr
    assert (session / "notes.txt").read_bytes() == b"my notes\r\nsecond line\r\n"
    assert not (session / "c.txt").exists()


def unshare_works() -> bool:
    if shutil.which("unshare") is None:
        return False
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        probe = subprocess.run(
            ["unshare", "-rm", "sh", "-c", f'mount --bind -o ro "{tmp}" "{tmp}"'],
            capture_output=True,
            check=False,
        )
    return probe.returncode == 0


def as_sandboxed_agent(repo: Path, command: str) -> subprocess.CompletedProcess[str]:
    """`command` the way the agent's sandbox runs it: .git mounted read-only (a user and mount
    namespace of its own; the real sandbox is Claude Code's, launched by plan-build)."""
    git_dir = repo / ".git"
    return subprocess.run(
        ["unshare", "-rm", "sh", "-c", f'mount --bind -o ro "{git_dir}" "{git_dir}" && {command}'],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.skipif(not unshare_works(), reason="needs user and mount namespaces (unshare -rm)")
def test_in_the_sandbox_rm_rf_git_and_reset_fail_and_the_checkpoints_survive(
    session: Path, cli: Any
) -> None:
    before = state(session)
    change = intended_change(session)
    assert hook(session, "Bash", {"command": "rm -rf .git"}).returncode == 0
    refs = git(session, "for-each-ref", checkpoint.REF_PREFIX)

    for command in ("rm -rf .git", "git reset -q --hard", "git update-ref -d " + refs.split()[-1]):
        assert as_sandboxed_agent(session, command).returncode != 0

    assert git(session, "for-each-ref", checkpoint.REF_PREFIX) == refs
    assert state(session) == before
    assert cli("restore", "--dry-run", cwd=session).code == ExitCode.BLOCKED  # nothing to do
    assert intended_change(session) == change


def test_without_the_sandbox_rm_rf_git_loses_the_checkpoints_and_every_later_write_is_refused(
    session: Path,
) -> None:
    files = state(session)["files"]
    assert hook(session, "Bash", {"command": "rm -rf .git"}).returncode == 0
    shutil.rmtree(session / ".git")

    after = hook(session, "Bash", {"command": "ls"})

    assert after.returncode == 2  # fail closed: no checkpoint, no write
    assert "could not checkpoint the work tree" in after.stderr
    # the work tree itself was not touched by `rm -rf .git`
    assert {k: v for k, v in state_files(session).items()} == files


def state_files(repo: Path) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for path in sorted(repo.rglob("*")):
        rel = path.relative_to(repo)
        if path.is_symlink():
            found[str(rel)] = ("link", os.readlink(path))
        elif path.is_file():
            found[str(rel)] = (oct(path.stat().st_mode & 0o777), path.read_bytes())
    return found


def test_an_unchanged_tree_takes_no_new_checkpoint_and_sandbox_mount_points_are_not_work(
    repo: Path,
) -> None:
    r = gitrepo.discover(repo)
    first = checkpoint.take(r, "first")
    assert first.new
    for name in (".bashrc", ".gitconfig", ".mcp.json"):
        (repo / name).write_bytes(b"")  # what the sandbox leaves while a command runs
    again = checkpoint.take(r, "again")
    assert not again.new
    assert again.ref == first.ref
    (repo / "README.md").write_text("# changed\n")
    changed = checkpoint.take(r, "changed")
    assert changed.new
    assert changed.tree != first.tree
    names = git(repo, "ls-tree", "-r", "--name-only", f"{changed.ref}:worktree").split()
    assert names == ["README.md"]


def test_ignored_trees_are_not_copied_and_large_files_are_listed_as_skipped(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checkpoint, "MAX_FILE", 1000)
    (repo / ".gitignore").write_text("node_modules/\n")
    (repo / "node_modules" / "pkg").mkdir(parents=True)
    (repo / "node_modules" / "pkg" / "index.js").write_text("x")
    (repo / "big.bin").write_bytes(b"x" * 2000)
    r = gitrepo.discover(repo)
    taken = checkpoint.take(r, "t")
    names = git(repo, "ls-tree", "-r", "--name-only", f"{taken.ref}:worktree").split()
    assert names == [".gitignore", "README.md"]
    assert taken.skipped == ("big.bin",)
    # a write inside the ignored tree is not a change
    (repo / "node_modules" / "pkg" / "index.js").write_text("y")
    assert not checkpoint.take(r, "t").new


def test_checkpoints_are_pruned_by_count_and_age(repo: Path) -> None:
    r = gitrepo.discover(repo)
    for i in range(checkpoint.KEEP_ALWAYS + 5):
        (repo / "README.md").write_text(f"{i}\n")
        assert checkpoint.take(r, f"n{i}").new
    assert len(checkpoint.listed(r)) == checkpoint.KEEP_ALWAYS + 5
    dropped = checkpoint.prune_old(r, now=1e10)  # far in the future: all are too old
    assert len(dropped) == 5
    assert len(checkpoint.listed(r)) == checkpoint.KEEP_ALWAYS


def test_checkpoints_lists_the_call_that_followed_and_what_changed(session: Path, cli: Any) -> None:
    assert hook(session, "Bash", {"command": "git reset --hard"}).returncode == 0
    assert (
        hook(session, "Bash", {"command": "curl -H 'Authorization: Bearer abc123'"}).returncode == 0
    )
    subprocess.run(["git", "reset", "-q", "--hard"], cwd=session, check=True)

    r = cli("checkpoints", cwd=session)

    assert r.code == 0, r.stderr
    assert "then Bash: git reset --hard" in r.stderr
    assert "abc123" not in r.stderr
    assert "since, up to the work tree now:" in r.stderr
    # reset --hard brought back HEAD's files and left the untracked ones
    assert "1 added (gone.txt); 4 changed (a.txt, b.txt, c.txt, …)" in r.stderr


def test_the_hook_is_registered_before_every_writing_tool() -> None:
    layer = claudelayer.settings("plan")
    hooks = layer["hooks"]
    assert isinstance(hooks, dict)
    entries = [e for e in hooks["PreToolUse"] if "checkpoint" in e["hooks"][0]["command"]]
    assert [e["matcher"] for e in entries] == ["Bash|Edit|Write|MultiEdit|NotebookEdit"]
    assert entries[0]["hooks"][0]["onFailure"] == "block"


def test_restore_replaces_a_symlink_out_of_the_repository_and_never_writes_through_it(
    repo: Path, tmp_path: Path, cli: Any
) -> None:
    (repo / "dir").mkdir()
    (repo / "dir" / "f.txt").write_text("mine\n")
    r = gitrepo.discover(repo)
    checkpoint.take(r, "t")
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.rmtree(repo / "dir")
    os.symlink(outside, repo / "dir")

    out = cli("restore", "--force", cwd=repo)

    assert out.code == 0, out.stderr
    assert list(outside.iterdir()) == []
    assert not stat.S_ISLNK(os.lstat(repo / "dir").st_mode)
    assert (repo / "dir" / "f.txt").read_text() == "mine\n"


def test_commit_refusal_names_restore_when_files_the_baseline_held_vanished(
    session: Path, cli: Any
) -> None:
    (session / "notes.txt").unlink()  # the user's untracked file, gone during the session
    (session / "b.txt").unlink()  # the user's edited file, gone too
    verified(session)

    r = cli("commit", "--message", "x", cwd=session)

    assert r.code == ExitCode.BLOCKED
    assert "vanished from the work tree" in r.stderr
    assert "plan-build restore" in r.stderr
    status = cli("status", cwd=session)
    assert "bring vanished files back: plan-build restore" in status.stderr + status.stdout


def test_status_says_when_the_last_checkpoint_was_taken(session: Path, cli: Any) -> None:
    assert "checkpoint" not in cli("status", cwd=session).stderr
    assert hook(session, "Edit", {"file_path": str(session / "c.txt")}).returncode == 0
    taken = checkpoint.last_taken(gitrepo.discover(session))
    assert taken is not None
    r = cli("status", cwd=session)
    assert f"checkpoint {taken.replace('T', ' ').replace('Z', ' UTC')}" in r.stderr
    assert json.loads(cli("status", "--json", cwd=session).stdout)["last_checkpoint"] == taken


def test_the_report_says_when_the_last_checkpoint_was_taken(session: Path, cli: Any) -> None:
    assert hook(session, "Bash", {"command": "make"}).returncode == 0
    taken = checkpoint.last_taken(gitrepo.discover(session))
    r = cli("report", "--format", "md", cwd=session)
    assert r.code == 0, r.stderr
    written = session / ".git" / "plan-build" / "sessions" / "s" / "report.md"
    assert f"last checkpoint {taken}" in written.read_text()


def test_restore_will_not_drop_what_was_staged_since_unasked(session: Path, cli: Any) -> None:
    assert hook(session, "Bash", {"command": "git add"}).returncode == 0
    (session / "new.py").write_text("print('staged since')\n")
    git(session, "add", "new.py")
    (session / "new.py").write_text("print('new')\n")  # the work tree as the checkpoint had it

    refused = cli("restore", cwd=session)

    assert refused.code == ExitCode.BLOCKED
    assert "new.py (staged)" in refused.stderr
    assert git(session, "show", ":new.py") == "print('staged since')\n"


def test_the_hooks_quick_look_shares_the_checkpoint_rules() -> None:
    from plan_build.startup import checkpointhook

    assert checkpointhook.CALL_LOG == checkpoint.CALL_LOG
    assert checkpointhook.TOOL_STATE == checkpoint.TOOL_STATE
    assert checkpointhook.MOUNT_POINTS == checkpoint.MOUNT_POINTS


def test_the_hooks_quick_look_answers_only_when_nothing_changed(repo: Path) -> None:
    import time

    from plan_build.startup import checkpointhook

    time.sleep(4 * checkpoint.CLOCK_MARGIN_NS / 1e9)  # what the fixture wrote is older
    taken = checkpoint.take(gitrepo.discover(repo), "t")
    assert checkpointhook.unchanged(repo) == taken.ref
    (repo / ".bashrc").write_bytes(b"")  # the sandbox's mount point moves the top's ctime
    assert checkpointhook.unchanged(repo) == taken.ref
    (repo / "sub").mkdir()
    assert checkpointhook.unchanged(repo) is None  # a new name: the full check decides
    (repo / "sub").rmdir()
    checkpoint.take(gitrepo.discover(repo), "t")
    (repo / "README.md").chmod(0o744)
    assert checkpointhook.unchanged(repo) is None
    time.sleep(4 * checkpoint.CLOCK_MARGIN_NS / 1e9)  # (a change within the margin counts)
    assert hook(repo, "Bash", {"command": "ls"}).returncode == 0
    assert checkpointhook.unchanged(repo) is not None
    assert checkpointhook.unchanged(repo) != taken.ref  # the chmod made a new checkpoint


def test_a_dispatch_checkpoints_before_codex_runs_and_restore_undoes_its_edit(
    repo: Path, stubs: Any, cli: Any
) -> None:
    from tests.support.dispatching import codex_edits, make_plan

    make_plan(repo)
    before = (repo / "src" / "app.py").read_bytes()
    codex_edits(stubs, {"src/app.py": "fixed\n"})

    r = cli("dispatch", "TASK-002", cwd=repo, env={"PLAN_BUILD_MEMORY_MODE": "degraded"})

    assert r.code == 0, r.stderr
    found = checkpoint.listed(gitrepo.discover(repo))
    named = [c for c in found if c.meta.get("reason") == "before Codex attempt 1"]
    assert named, [c.meta for c in found]
    back = cli("restore", named[0].name, "src/app.py", "--force", cwd=repo)
    assert back.code == 0, back.stderr
    assert (repo / "src" / "app.py").read_bytes() == before


def test_a_wave_result_is_checkpointed_before_it_is_applied_back(repo: Path) -> None:
    from plan_build.dispatch import applyback
    from tests.test_wave_applyback import setup, trees

    setup(repo)
    r, base, end, now = trees(repo, {"a.txt": b"1\nTASK\n3\n4\n5\n6\n"}, {"a.txt": b"USER\n"})
    got = applyback.apply(
        r, task_id="TASK-002", base=base, end=end, now=now, paths=["a.txt"], applied_by={}
    )

    assert not got.ok  # the user's edit overlaps: nothing written
    newest = checkpoint.listed(r)[0]
    assert newest.meta["reason"] == "before applying TASK-002's result"
    assert git(repo, "show", f"{newest.ref}:worktree/a.txt") == "USER\n"
