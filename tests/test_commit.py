"""`commit`: one approved commit of exactly the session's change; the user's own uncommitted
work (staged, unstaged, untracked) is exactly as it was afterwards; nothing is pushed."""

from __future__ import annotations

import io
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from plan_build.core import config, gitrepo
from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.core.ui import Console
from plan_build.delivery import baseline, commit
from plan_build.delivery import verify as verify_mod
from tests.support.gitcmd import add_submodule, git
from tests.support.interaction import ScriptedInteraction

LINES = "".join(f"line {i}\n" for i in range(1, 31))


def numbered(**changes: str) -> str:
    """The 30-line file with some lines replaced: numbered(l5="x") changes line 5."""
    lines = [f"line {i}\n" for i in range(1, 31)]
    for key, text in changes.items():
        lines[int(key[1:]) - 1] = text + "\n"
    return "".join(lines)


@pytest.fixture
def shop(repo: Path) -> Path:
    for name in ("a.txt", "b.txt", "c.txt", "gone.txt"):
        (repo / name).write_text(LINES)
    (repo / ".gitignore").write_text("*.log\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "files")
    return repo


def start(repo: Path, sid: str = "s") -> None:
    baseline.capture(gitrepo.discover(repo), session_id=sid)


def verified(repo: Path) -> verify_mod.Report:
    r = gitrepo.discover(repo)
    report = verify_mod.run(
        r, baseline.current(r, {}), config=config.load(repo), env=dict(os.environ)
    )
    assert report.ok, [c for c in report.checks if c.failed]
    return report


def do_commit(
    repo: Path,
    *,
    answers: list[str] | None = None,
    message: str | None = "Session work",
    interactive: bool = True,
    edits: list[str] | None = None,
    env: dict[str, str] | None = None,
) -> commit.Outcome:
    r = gitrepo.discover(repo)
    ui = ScriptedInteraction(
        answers=["y"] if answers is None else answers, interactive=interactive, edits=edits or []
    )
    return commit.run(
        r,
        baseline.current(r, {}),
        ui=ui,
        console=Console(io.StringIO()),
        env=env if env is not None else dict(os.environ),
        message=message,
    )


def frozen(repo: Path) -> dict[str, Any]:
    """Everything a refusal must leave alone."""
    gd = Path(git(repo, "rev-parse", "--absolute-git-dir").strip())
    files = {
        str(p.relative_to(repo)): p.read_bytes()
        for p in sorted(repo.rglob("*"))
        if p.is_file() and ".git" not in p.parts
    }
    return {
        "head": git(repo, "rev-parse", "HEAD").strip(),
        "index": (gd / "index").read_bytes(),
        "files": files,
        "branches": git(repo, "for-each-ref", "refs/heads"),
    }


def show(repo: Path, spec: str) -> str:
    return git(repo, "show", spec)


def test_commit_contains_only_the_session_edits_and_keeps_every_user_change(shop: Path) -> None:
    # The user's work before the session: staged, unstaged, untracked and ignored.
    (shop / "a.txt").write_text(numbered(l5="USER STAGED 5"))
    git(shop, "add", "a.txt")
    (shop / "b.txt").write_text(numbered(l2="USER UNSTAGED 2"))
    (shop / "notes.txt").write_text("my notes\n")
    (shop / "run.log").write_text("ignored\n")
    status_before = git(shop, "status", "--porcelain")
    start(shop)
    # The session: a separate hunk in b.txt, c.txt, a new file and a deletion.
    (shop / "b.txt").write_text(numbered(l2="USER UNSTAGED 2", l20="SESSION 20"))
    (shop / "c.txt").write_text(numbered(l1="SESSION 1"))
    (shop / "new.py").write_text("print('new')\n")
    (shop / "gone.txt").unlink()
    files_before = frozen(shop)["files"]
    verified(shop)

    out = do_commit(shop)

    assert git(shop, "rev-parse", "HEAD").strip() == out.commit
    shown = git(shop, "show", "--name-status", "--format=%s", "HEAD").split("\n")
    assert shown[0] == "Session work"
    assert sorted(line for line in shown[1:] if line) == [
        "A\tnew.py",
        "D\tgone.txt",
        "M\tb.txt",
        "M\tc.txt",
    ]
    assert show(shop, "HEAD:b.txt") == numbered(l20="SESSION 20")  # not the user's line 2
    assert git(shop, "rev-list", "--count", "HEAD").strip() == "3"
    # Afterwards the user's state is as before, and the work tree was never written.
    assert frozen(shop)["files"] == files_before
    assert git(shop, "status", "--porcelain") == status_before.replace(" D gone.txt\n", "")
    removed = [x for x in git(shop, "diff", "b.txt").splitlines() if x.startswith("-")]
    assert removed == ["--- a/b.txt", "-line 2"]  # only the user's line 2 differs
    assert show(shop, ":a.txt") == numbered(l5="USER STAGED 5")
    assert (shop / "run.log").read_text() == "ignored\n"
    # The session is done; its pin is gone and a second commit is refused.
    assert git(shop, "for-each-ref", "refs/plan-build") == ""
    with pytest.raises(PlanBuildError, match="already committed as"):
        do_commit(shop)


def test_staged_edit_in_a_file_the_session_also_changed_stays_staged(shop: Path) -> None:
    (shop / "a.txt").write_text(numbered(l3="USER STAGED 3"))
    git(shop, "add", "a.txt")
    (shop / "a.txt").write_text(numbered(l3="USER STAGED 3", l9="USER UNSTAGED 9"))
    start(shop)
    (shop / "a.txt").write_text(numbered(l3="USER STAGED 3", l9="USER UNSTAGED 9", l25="S 25"))
    verified(shop)

    do_commit(shop)

    assert show(shop, "HEAD:a.txt") == numbered(l25="S 25")
    assert show(shop, ":a.txt") == numbered(l3="USER STAGED 3", l25="S 25")
    assert (shop / "a.txt").read_text() == numbered(
        l3="USER STAGED 3", l9="USER UNSTAGED 9", l25="S 25"
    )
    assert git(shop, "status", "--porcelain") == "MM a.txt\n"


def test_adjoining_edit_is_refused_naming_file_and_lines(shop: Path, cli) -> None:
    (shop / "b.txt").write_text(numbered(l2="USER 2"))
    start(shop)
    (shop / "b.txt").write_text(numbered(l2="USER 2", l3="SESSION 3"))
    (shop / "c.txt").write_text(numbered(l1="fine"))
    assert cli("verify", cwd=shop).code == 0
    before = frozen(shop)

    r = cli("commit", "--message", "x", cwd=shop)

    assert r.code == ExitCode.BLOCKED
    assert "overlaps work that was uncommitted before it started; nothing was committed" in (
        r.stderr
    )
    assert (
        "b.txt: the session's edit (line 3 now) touches your earlier edit (line 2 at the "
        "session start)" in r.stderr
    )
    assert "c.txt" not in r.stderr
    assert frozen(shop) == before


def test_session_editing_a_users_untracked_file_is_refused(shop: Path) -> None:
    (shop / "notes.txt").write_text("mine\n")
    start(shop)
    (shop / "notes.txt").write_text("mine\nsession\n")
    verified(shop)
    before = frozen(shop)
    with pytest.raises(PlanBuildError) as exc:
        do_commit(shop)
    assert exc.value.code == ExitCode.BLOCKED
    assert "notes.txt: the session changed a file that already had uncommitted changes" in (
        exc.value.what
    )
    assert frozen(shop) == before


def test_session_deleting_a_file_the_user_had_edited_is_refused(shop: Path) -> None:
    (shop / "a.txt").write_text(numbered(l1="USER"))
    start(shop)
    (shop / "a.txt").unlink()
    verified(shop)
    with pytest.raises(PlanBuildError, match=r"a\.txt: the session changed a file"):
        do_commit(shop)


def test_binary_file_edited_before_and_during_the_session_is_refused(shop: Path) -> None:
    (shop / "logo.bin").write_bytes(b"\x00v1")
    git(shop, "add", ".")
    git(shop, "commit", "-qm", "logo")
    (shop / "logo.bin").write_bytes(b"\x00v2-user")
    start(shop)
    (shop / "logo.bin").write_bytes(b"\x00v3-session")
    verified(shop)
    with pytest.raises(PlanBuildError, match=r"logo\.bin: .*\(binary file\)"):
        do_commit(shop)


def test_stop_at_the_approval_gate_changes_nothing(shop: Path) -> None:
    start(shop)
    (shop / "c.txt").write_text(numbered(l1="S"))
    verified(shop)
    before = frozen(shop)
    with pytest.raises(PlanBuildError) as exc:
        do_commit(shop, answers=["n"])
    assert exc.value.code == ExitCode.APPROVAL
    assert "stopped at your request; nothing was committed" in exc.value.what
    assert frozen(shop) == before
    with pytest.raises(PlanBuildError) as exc:
        do_commit(shop, interactive=False)
    assert exc.value.code == ExitCode.APPROVAL
    assert frozen(shop) == before
    assert do_commit(shop).commit  # still committable afterwards


def test_without_a_terminal_the_cli_stops_with_exit_4(shop: Path, cli) -> None:
    start(shop)
    (shop / "c.txt").write_text(numbered(l1="S"))
    assert cli("verify", cwd=shop).code == 0
    r = cli("commit", "--message", "m", cwd=shop)
    assert r.code == ExitCode.APPROVAL
    assert "approval needed but there is no terminal" in r.stderr
    assert "commit · session s" in r.stderr  # the summary was shown first
    r = cli("commit", cwd=shop)
    assert r.code == ExitCode.APPROVAL
    assert "write the commit message" in r.stderr


def test_message_from_the_editor_drops_comment_lines(shop: Path) -> None:
    start(shop)
    (shop / "c.txt").write_text(numbered(l1="S"))
    verified(shop)
    out = do_commit(
        shop, message=None, edits=["Add pagination  \n\nBecause.\n# ignored\n#   M  c.txt\n"]
    )
    assert out.message == "Add pagination\n\nBecause.\n"
    assert git(shop, "log", "-1", "--format=%B").rstrip("\n") == "Add pagination\n\nBecause."


def test_an_empty_message_is_refused(shop: Path, cli) -> None:
    start(shop)
    (shop / "c.txt").write_text(numbered(l1="S"))
    verified(shop)
    r = cli("commit", "--message", "  ", cwd=shop)
    assert r.code == ExitCode.USAGE
    assert "the commit message is empty" in r.stderr
    with pytest.raises(PlanBuildError) as exc:
        do_commit(shop, message=None, edits=["# only a comment\n\n"])
    assert exc.value.code == ExitCode.APPROVAL
    assert git(shop, "rev-list", "--count", "HEAD").strip() == "2"


def test_an_agent_session_cannot_commit_even_with_a_terminal(shop: Path) -> None:
    start(shop)
    (shop / "c.txt").write_text(numbered(l1="S"))
    verified(shop)
    for marker in ("CLAUDECODE", "CODEX_SANDBOX"):
        with pytest.raises(PlanBuildError) as exc:
            do_commit(shop, env={**os.environ, marker: "1"})  # scripted "y" is never asked
        assert exc.value.code == ExitCode.APPROVAL
        assert "needs the user's own approval" in exc.value.what
        assert f"({marker} is set)" in exc.value.what
    assert git(shop, "rev-list", "--count", "HEAD").strip() == "2"


def test_there_is_no_way_to_approve_without_the_terminal(shop: Path, cli) -> None:
    start(shop)
    (shop / "c.txt").write_text(numbered(l1="S"))
    assert cli("verify", cwd=shop).code == 0
    r = cli("commit", "--yes", "--message", "m", cwd=shop)
    assert r.code == ExitCode.USAGE
    assert "unknown option --yes" in r.stderr
    r = cli("commit", "--message", "m", cwd=shop)
    assert r.code == ExitCode.APPROVAL
    assert git(shop, "rev-list", "--count", "HEAD").strip() == "2"


def test_head_moved_since_the_baseline_is_refused(shop: Path) -> None:
    start(shop)
    (shop / "c.txt").write_text(numbered(l1="S"))
    git(shop, "commit", "-qam", "someone committed")
    with pytest.raises(PlanBuildError, match="HEAD moved since the session baseline"):
        do_commit(shop)


def test_switched_branch_is_refused(shop: Path) -> None:
    start(shop)
    git(shop, "switch", "-q", "-c", "elsewhere")
    with pytest.raises(PlanBuildError, match="was main, now elsewhere"):
        do_commit(shop)


def test_verification_must_have_passed_on_this_exact_change(shop: Path) -> None:
    start(shop)
    (shop / "c.txt").write_text(numbered(l1="S"))
    with pytest.raises(PlanBuildError, match="has not been verified"):
        do_commit(shop)
    verified(shop)
    (shop / "c.txt").write_text(numbered(l1="S", l2="later"))
    with pytest.raises(PlanBuildError, match="differs from the one last verified"):
        do_commit(shop)
    (shop / "c.txt").write_text(numbered(l1="S   "))
    r = gitrepo.discover(shop)
    report = verify_mod.run(r, baseline.load(r, "s"), config=config.load(shop), env={})
    assert not report.ok
    with pytest.raises(PlanBuildError, match=r"verification failed for this change \(diff.check\)"):
        do_commit(shop)


def test_nothing_to_commit(shop: Path, cli) -> None:
    (shop / "notes.txt").write_text("pre-existing\n")
    start(shop)
    r = cli("commit", "--message", "m", cwd=shop)
    assert r.code == ExitCode.BLOCKED
    assert "nothing to commit: the work tree matches the session baseline" in r.stderr


def test_detached_head_commit_moves_only_head(shop: Path) -> None:
    git(shop, "switch", "-q", "--detach")
    start(shop)
    (shop / "c.txt").write_text(numbered(l1="S"))
    verified(shop)
    main_before = git(shop, "rev-parse", "main").strip()
    out = do_commit(shop)
    assert out.branch is None
    assert git(shop, "rev-parse", "HEAD").strip() == out.commit
    assert git(shop, "rev-parse", "main").strip() == main_before


def test_first_commit_on_an_unborn_branch(tmp_path: Path) -> None:
    root = tmp_path / "fresh"
    root.mkdir()
    git(root, "init", "-q")
    (root / "draft.txt").write_text("the user's draft\n")
    start(root)
    (root / "app.py").write_text("print('hello')\n")
    verified(root)
    out = do_commit(root)
    assert git(root, "rev-list", "--count", "HEAD").strip() == "1"
    assert git(root, "ls-tree", "-r", "--name-only", "HEAD").split() == ["app.py"]
    assert git(root, "status", "--porcelain") == "?? draft.txt\n"
    assert git(root, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    assert out.branch == "main"


def test_odd_files_are_committed_exactly(shop: Path) -> None:
    (shop / "tool.sh").write_text("echo hi\n")
    git(shop, "add", ".")
    git(shop, "commit", "-qm", "tool")
    start(shop)
    os.chmod(shop / "tool.sh", 0o755)  # noqa: S103  (executable bit only)
    (shop / "link").symlink_to("a.txt")
    weird = os.fsdecode("spaced naïve\nnew line.txt".encode())
    (shop / weird).write_text("odd name\n")
    (shop / "blob.bin").write_bytes(bytes(range(256)) * 4)
    os.rename(shop / "gone.txt", shop / "moved.txt")  # a rename: delete + add
    (shop / "crlf.txt").write_bytes(b"one\r\ntwo\r\n")
    (shop / ".gitattributes").write_text("crlf.txt whitespace=cr-at-eol\n")
    verified(shop)

    do_commit(shop)

    tree = git(shop, "ls-tree", "-r", "HEAD")
    assert "100755 blob" in next(line for line in tree.splitlines() if line.endswith("tool.sh"))
    assert "120000 blob" in next(line for line in tree.splitlines() if line.endswith("link"))
    assert "gone.txt" not in tree
    assert "moved.txt" in tree
    raw = subprocess.run(
        ["git", "cat-file", "blob", "HEAD:blob.bin"], cwd=shop, capture_output=True, check=True
    ).stdout
    assert raw == bytes(range(256)) * 4
    crlf = subprocess.run(
        ["git", "cat-file", "blob", "HEAD:crlf.txt"], cwd=shop, capture_output=True, check=True
    ).stdout
    assert crlf == b"one\r\ntwo\r\n"
    names = subprocess.run(
        ["git", "ls-tree", "-z", "--name-only", "HEAD"], cwd=shop, capture_output=True, check=True
    ).stdout.split(b"\0")
    assert os.fsencode(weird) in names
    assert git(shop, "status", "--porcelain") == ""


def test_exec_bit_edit_before_and_content_edit_during_the_session_combine(shop: Path) -> None:
    os.chmod(shop / "a.txt", 0o755)  # noqa: S103
    start(shop)
    (shop / "a.txt").write_text(numbered(l10="S"))
    verified(shop)
    do_commit(shop)
    line = git(shop, "ls-tree", "HEAD", "a.txt")
    assert line.startswith("100644")  # the user's chmod stays uncommitted
    assert show(shop, "HEAD:a.txt") == numbered(l10="S")
    assert stat.S_IMODE((shop / "a.txt").stat().st_mode) & 0o100
    assert git(shop, "diff", "--summary") == " mode change 100644 => 100755 a.txt\n"


def test_linked_worktree_commit(shop: Path) -> None:
    wt = shop.parent / "shop-feature"
    git(shop, "worktree", "add", "-q", "-b", "feature", str(wt))
    (shop / "a.txt").write_text(numbered(l1="main worktree edit"))
    main_before = frozen(shop)
    start(wt)
    (wt / "feature.txt").write_text("feature\n")
    verified(wt)

    out = do_commit(wt)

    assert git(wt, "rev-parse", "feature").strip() == out.commit
    assert git(shop, "rev-parse", "main").strip() == main_before["head"]
    assert frozen(shop)["index"] == main_before["index"]
    assert git(wt, "status", "--porcelain") == ""


def test_dirty_submodule_is_left_alone(shop: Path, tmp_path: Path) -> None:
    add_submodule(shop, tmp_path / "lib")
    (shop / "lib/lib.txt").write_text("v2 dirty\n")
    start(shop)
    (shop / "c.txt").write_text(numbered(l1="S"))
    verified(shop)
    do_commit(shop)
    assert git(shop, "show", "--name-only", "--format=", "HEAD").split() == ["c.txt"]
    assert (shop / "lib/lib.txt").read_text() == "v2 dirty\n"


def test_mid_merge_commit_is_refused(shop: Path) -> None:
    start(shop)
    (shop / "c.txt").write_text(numbered(l1="S"))
    (shop / ".git/MERGE_HEAD").write_text(git(shop, "rev-parse", "HEAD"))
    with pytest.raises(PlanBuildError, match="cannot commit: a merge is in progress"):
        do_commit(shop)


def test_missing_identity_is_refused_before_asking(shop: Path, monkeypatch) -> None:
    start(shop)
    (shop / "c.txt").write_text(numbered(l1="S"))
    verified(shop)
    for var in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
        monkeypatch.delenv(var)
    git(shop, "config", "user.useConfigOnly", "true")
    git(shop, "config", "--global", "--unset", "user.name")
    git(shop, "config", "--global", "--unset", "user.email")
    with pytest.raises(PlanBuildError, match="git does not know who you are"):
        do_commit(shop, answers=[])


def test_a_concurrent_commit_is_refused(shop: Path) -> None:
    start(shop)
    (shop / "c.txt").write_text(numbered(l1="S"))
    verified(shop)
    lock = shop / ".git/plan-build/commit.lock"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl,sys,time; f=open(sys.argv[1],'a'); fcntl.flock(f, fcntl.LOCK_EX); "
            "print('locked', flush=True); time.sleep(30)",
            str(lock),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(PlanBuildError, match="another plan-build commit is running"):
            do_commit(shop)
    finally:
        holder.kill()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()
    assert do_commit(shop).commit


def test_ctrl_c_between_commit_tree_and_update_ref_loses_nothing(
    shop: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (shop / "a.txt").write_text(numbered(l1="USER"))
    git(shop, "add", "a.txt")
    start(shop)
    (shop / "c.txt").write_text(numbered(l1="S"))
    verified(shop)
    before = frozen(shop)

    def interrupt(stage: str) -> None:
        if stage == "after-commit-tree":
            raise KeyboardInterrupt

    monkeypatch.setattr(commit, "_checkpoint", interrupt)
    with pytest.raises(KeyboardInterrupt):
        do_commit(shop)
    assert frozen(shop) == before
    monkeypatch.setattr(commit, "_checkpoint", lambda stage: None)
    out = do_commit(shop)
    assert show(shop, "HEAD:c.txt") == numbered(l1="S")
    assert out.commit == git(shop, "rev-parse", "HEAD").strip()


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_a_stop_signal_after_update_ref_is_held_back_until_the_index_is_synced(
    shop: Path, monkeypatch: pytest.MonkeyPatch, signame: str
) -> None:
    start(shop)
    (shop / "c.txt").write_text(numbered(l1="S"))
    verified(shop)

    def signal_self(stage: str) -> None:
        if stage == "after-update-ref":
            os.kill(os.getpid(), getattr(signal, signame))
            time.sleep(0.05)

    monkeypatch.setattr(commit, "_checkpoint", signal_self)
    out = do_commit(shop)
    assert out.interrupted
    assert git(shop, "status", "--porcelain") == ""


def test_a_crash_after_update_ref_is_finished_by_the_next_run(
    shop: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (shop / "a.txt").write_text(numbered(l1="USER STAGED"))
    git(shop, "add", "a.txt")
    start(shop)
    (shop / "c.txt").write_text(numbered(l1="S"))
    verified(shop)

    class Crash(Exception):
        pass

    def crash(stage: str) -> None:
        if stage == "after-update-ref":
            raise Crash

    monkeypatch.setattr(commit, "_checkpoint", crash)
    with pytest.raises(Crash):
        do_commit(shop)
    assert git(shop, "status", "--porcelain") == "M  a.txt\nMM c.txt\n"  # index not synced yet
    monkeypatch.setattr(commit, "_checkpoint", lambda stage: None)
    with pytest.raises(PlanBuildError, match="an interrupted commit was finished just now"):
        do_commit(shop)
    assert git(shop, "status", "--porcelain") == "M  a.txt\n"


def test_no_code_path_pushes(shop: Path, cli, tmp_path: Path) -> None:
    """A git wrapper first on PATH records every git command of a whole session."""
    real = subprocess.run(["which", "git"], capture_output=True, text=True, check=True).stdout
    wrap = tmp_path / "wrap"
    wrap.mkdir()
    log = tmp_path / "git-calls.log"
    (wrap / "git").write_text(
        f'#!/bin/sh\nprintf "%s\\n" "$*" >> {log}\nexec {real.strip()} "$@"\n'
    )
    (wrap / "git").chmod(0o755)
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(shop, "remote", "add", "origin", str(remote))
    env = {"PATH": f"{wrap}{os.pathsep}{os.environ['PATH']}"}
    assert cli("baseline", cwd=shop, env=env).code == 0
    (shop / "c.txt").write_text(numbered(l1="S"))
    assert cli("status", cwd=shop, env=env).code == 0
    assert cli("verify", cwd=shop, env=env).code == 0
    from tests.support.pty_run import run_on_pty

    r = run_on_pty(
        [sys.executable, "-m", "plan_build", "commit", "--message", "session"],
        cwd=shop,
        env={**os.environ, **env},
        typed=[("Nothing is pushed.", "y\n")],
    )
    assert r.code == 0, r.output
    assert "nothing was pushed" in r.output
    calls = log.read_text().splitlines()
    assert any(c.startswith("commit-tree") or " commit-tree " in c for c in calls)
    assert not [c for c in calls if "push" in c.split()]
    assert git(remote, "for-each-ref") == ""
    source = Path(commit.__file__).parents[1]  # the whole plan_build package
    # the two modules of Claude's settings layer name `push` to refuse it (docs/adr/0170);
    # neither runs a process
    refusers = {source / "startup" / "shellgate.py", source / "startup" / "claudelayer.py"}
    assert not [
        p
        for p in source.rglob("*.py")
        if p not in refusers and ('"push"' in p.read_text() or "'push'" in p.read_text())
    ]
    for p in refusers:
        assert "proc.run" not in p.read_text()
        assert "import subprocess" not in p.read_text()


def test_on_a_terminal_the_user_writes_the_message_and_approves(shop: Path, tmp_path: Path) -> None:
    from tests.support.pty_run import run_on_pty

    start(shop)
    (shop / "c.txt").write_text(numbered(l1="S"))
    verified(shop)
    editor = tmp_path / "editor.py"
    editor.write_text(
        "import sys\n"
        "text = open(sys.argv[1]).read()\n"
        "open(sys.argv[1], 'w').write('Paginate the audit log\\n' + text)\n"
    )
    env = {**os.environ, "EDITOR": f"{sys.executable} {editor}"}
    argv = [sys.executable, "-m", "plan_build", "commit"]

    stopped = run_on_pty(argv, cwd=shop, env=env, typed=[("Nothing is pushed.", "\n")])
    assert stopped.code == ExitCode.APPROVAL  # Enter takes the safe default: no
    assert "Create this commit on main? Nothing is pushed. [y]es · [n]o (default)" in (
        stopped.output
    )
    assert git(shop, "rev-list", "--count", "HEAD").strip() == "2"

    done = run_on_pty(argv, cwd=shop, env=env, typed=[("Nothing is pushed.", "y\n")])
    assert done.code == 0, done.output
    assert "    Paginate the audit log" in done.output  # the summary shows the message
    assert "committed" in done.output
    assert git(shop, "log", "-1", "--format=%s").strip() == "Paginate the audit log"
