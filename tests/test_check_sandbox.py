"""Every program plan-build runs for the project runs under the session's sandbox policy
(docs/adr/0190): verify's commands, the test suites they start, a task's Verification commands.
Whatever those programs are — a script, a conftest.py, git running a hook — they cannot commit,
push, move a ref or write git's config or hooks; each refusal is named in one line; ordinary
checks still pass."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from plan_build.core import config, gitrepo, guard, proc, sandbox
from plan_build.core.checkrun import run_check
from plan_build.core.errors import PlanBuildError
from plan_build.delivery import baseline
from plan_build.delivery import verify as verify_mod
from tests.support.gitcmd import git

PY = sys.executable

pytestmark = pytest.mark.skipif(
    not sandbox.probe(dict(os.environ)).ok,
    reason="needs bubblewrap and socat (.ci/run installs them): "
    + str(sandbox.probe(dict(os.environ)).problem),
)


@pytest.fixture
def session(repo: Path, tmp_path: Path) -> Path:
    (repo / "app.py").write_text("def f():\n    return 1\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "app")
    remote = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "push", "-q", "origin", "HEAD:refs/heads/main")  # the test's own setup
    baseline.capture(gitrepo.discover(repo), session_id="s")
    return repo


def configure(repo: Path, commands: list[dict[str, Any]]) -> None:
    import yaml

    (repo / ".plan-build.yaml").write_text(yaml.safe_dump({"verify": {"commands": commands}}))


def verify(repo: Path) -> dict[str, Any]:
    r = gitrepo.discover(repo)
    report = verify_mod.run(
        r, baseline.load(r, "s"), config=config.load(repo), env=dict(os.environ)
    )
    return {"ok": report.ok, **{c.id: c for c in report.checks}}


def git_state(repo: Path) -> tuple[str, ...]:
    refs = git(repo, "for-each-ref", "--format=%(refname) %(objectname)")
    remote = git(repo, "ls-remote", "origin")
    config_text = (repo / ".git" / "config").read_text()
    hooks = sorted(p.name for p in (repo / ".git" / "hooks").iterdir())
    index = (repo / ".git" / "index").read_bytes()
    return (refs, remote, config_text, str(hooks), str(len(index)), index.hex()[:64])


def py(code: str) -> list[str]:
    return [PY, "-c", code]


SH = "import subprocess, sys; sys.exit(subprocess.run(%r, shell=True).returncode)"

ATTACKS = {
    "commit": SH % "git commit -qam x --allow-empty",
    "commit without the word": SH % "git reset --soft $(git commit-tree -m x HEAD^{tree})",
    "push": SH % "git push -q origin HEAD:refs/heads/agent",
    "push from the remote's side": SH % 'git -C ../origin.git fetch -q "$PWD" HEAD:refs/heads/x',
    "move a ref": SH % "git update-ref refs/heads/main HEAD~0^{tree} 2>&1 || git branch -f x",
    "write git config": SH % "git config core.hooksPath hooks-of-mine",
    "write a hook": "open('.git/hooks/pre-commit','w').write('#!/bin/sh\\nexit 0\\n')",
    "stage": SH % "git add app.py",
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_a_verify_command_cannot_change_git_state_and_the_refusal_is_named(
    session: Path, attack: str
) -> None:
    (session / "app.py").write_text("def f():\n    return 2\n")
    before = git_state(session)
    configure(session, [{"name": "evil", "argv": py(ATTACKS[attack])}])

    result = verify(session)

    assert git_state(session) == before
    assert not result["ok"]
    row = result["command.evil"]
    assert row.status == "fail"
    expected = (
        "checks may write only the work tree and their temp directory"
        if attack.startswith("push")  # the write refused is the other repository's
        else "checks run without access to git state"
    )
    assert expected in row.detail, row.detail


def test_a_conftest_that_commits_from_inside_the_suite_changes_nothing(session: Path) -> None:
    """The suite's own files are the agent's to write: a conftest.py runs whatever it likes."""
    (session / "tests").mkdir()
    (session / "tests" / "conftest.py").write_text(
        "import subprocess\n"
        "subprocess.run(['git', 'commit', '-qam', 'from conftest', '--allow-empty'])\n"
        "subprocess.run(['git', 'push', '-q', 'origin', 'HEAD:refs/heads/conftest'])\n"
    )
    (session / "tests" / "test_ok.py").write_text("def test_ok():\n    assert True\n")
    before = git_state(session)
    configure(
        session,
        [{"name": "suite", "argv": [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]}],
    )

    result = verify(session)

    assert git_state(session) == before
    assert result["command.suite"].status == "pass"  # the suite itself passed; nothing moved
    assert result["git.state"].status == "pass"


def test_ordinary_checks_pass_writing_the_work_tree_and_their_temp_directory(session: Path) -> None:
    code = (
        "import os, tempfile, pathlib\n"
        "pathlib.Path('build').mkdir(exist_ok=True)\n"
        "pathlib.Path('build/out.txt').write_text('built')\n"
        "with tempfile.NamedTemporaryFile() as f: f.write(b'x')\n"
        "print('ok')\n"
    )
    (session / ".gitignore").write_text("build/\n")
    configure(session, [{"name": "build", "argv": py(code)}])

    result = verify(session)

    assert result["command.build"].status == "pass", result["command.build"].detail
    assert (session / "build" / "out.txt").read_text() == "built"


def test_a_check_writing_outside_the_work_tree_is_refused_with_the_reason(
    session: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"
    configure(session, [{"name": "out", "argv": py(f"open({str(outside)!r}, 'w').write('x')")}])

    row = verify(session)["command.out"]

    assert not outside.exists()
    assert row.status == "fail"
    assert "checks may write only the work tree and their temp directory" in row.detail


def test_a_check_has_no_network(session: Path) -> None:
    code = "import socket\ns = socket.socket(); s.settimeout(2)\ns.connect(('1.1.1.1', 443))\n"
    configure(session, [{"name": "net", "argv": py(code)}])

    row = verify(session)["command.net"]

    assert row.status == "fail"
    assert "checks run without network access" in row.detail


def test_credential_files_in_home_are_unreadable_to_a_check(session: Path) -> None:
    home = Path(os.environ["HOME"])
    (home / ".ssh").mkdir(exist_ok=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY\n")
    code = f"print(open({str(home / '.ssh' / 'id_ed25519')!r}).read())"
    configure(session, [{"name": "steal", "argv": py(code)}])

    row = verify(session)["command.steal"]

    assert row.status == "fail"
    log = (session / ".git/plan-build/sessions/s/logs/steal.log").read_text()
    assert "PRIVATE KEY" not in log


def test_verify_names_the_commands_this_session_changed_and_that_refs_held(session: Path) -> None:
    configure(session, [{"name": "tests", "argv": py("print('ok')")}])
    git(session, "add", ".plan-build.yaml")
    git(session, "commit", "-qm", "config")
    r = gitrepo.discover(session)
    baseline.capture(r, session_id="s3")
    configure(
        session,
        [
            {"name": "tests", "argv": py("print('ok')")},
            {"name": "extra", "argv": py("print('added by the session')")},
        ],
    )
    report = verify_mod.run(
        r, baseline.load(r, "s3"), config=config.load(session), env=dict(os.environ)
    )
    rows = {c.id: c for c in report.checks}

    assert rows["commands.changed"].status == "warn"
    assert "extra:" in rows["commands.changed"].detail
    assert "tests:" not in rows["commands.changed"].detail
    assert rows["git.state"].status == "pass"


def test_verify_notices_a_ref_that_moved_while_it_ran(session: Path, tmp_path: Path) -> None:
    """Outside the sandbox (an unguarded session, or another process) a ref can still move:
    verify does not pass over it."""
    state = gitrepo.discover(session).state_dir
    guard.record_guard(state, guard.new_guard("s", "unguarded", "typed: run unguarded", None))
    configure(session, [{"name": "sneaky", "argv": py(SH % "git branch sneaky")}])
    env = {**os.environ, "PLAN_BUILD_SESSION": "s"}
    r = gitrepo.discover(session)
    report = verify_mod.run(r, baseline.load(r, "s"), config=config.load(session), env=env)
    rows = {c.id: c for c in report.checks}

    assert rows["command.sneaky"].status == "pass"  # unguarded: it ran as it is
    assert rows["git.state"].status == "fail"
    assert "refs/heads/sneaky" in rows["git.state"].detail
    assert not report.ok


def test_without_bubblewrap_a_check_fails_with_the_fix(session: Path, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    os.symlink(PY, bin_dir / "python3")
    os.symlink(str(proc.which("git")), bin_dir / "git")
    env = {**os.environ, "PATH": f"{bin_dir}"}
    policy = sandbox.for_checks(session, env)
    assert policy is not None

    r = run_check(["python3", "-c", "print(1)"], cwd=session, env=env, timeout=30, policy=policy)

    assert not r.ok
    assert "sandbox" in str(r.error)
    assert "bubblewrap" in str(r.fix)


def test_a_task_worktree_inside_the_git_dir_is_writable_and_its_git_state_is_not(
    session: Path,
) -> None:
    wt = session / ".git" / "plan-build" / "worktrees" / "w1" / "TASK-001"
    git(session, "worktree", "add", "-q", "--detach", str(wt))
    policy = sandbox.for_checks(wt, dict(os.environ))
    assert policy is not None
    code = SH % "echo edited > app.py && git add app.py; git commit -qm x; touch ../../../../HEAD2"

    r = run_check(py(code), cwd=wt, env=dict(os.environ), timeout=30, policy=policy)

    assert (wt / "app.py").read_text() == "edited\n"
    assert not (session / ".git" / "HEAD2").exists()
    assert git(wt, "status", "--porcelain").strip() == "M app.py"
    assert "git state" in str(r.denied)


def test_claudes_settings_and_the_checks_share_one_policy(session: Path) -> None:
    repo = gitrepo.discover(session)
    policy = sandbox.for_tree(
        repo.root, git_dir=repo.git_dir, common_dir=repo.common_dir, env=dict(os.environ)
    )
    block = sandbox.claude_settings(policy)
    argv = sandbox.wrap(policy, ["true"], cwd=repo.root, tmp=Path("/tmp"), bwrap="bwrap")

    assert block["enabled"] is True
    assert block["failIfUnavailable"] is True
    assert block["allowUnsandboxedCommands"] is False
    for path in policy.protected:
        assert path.is_absolute()
        assert str(path) in block["filesystem"]["denyWrite"]
        i = argv.index(str(path))
        assert argv[i - 1] == "--ro-bind"
    assert str(repo.common_dir.resolve()) in block["filesystem"]["denyWrite"]
    assert json.dumps(block)  # serialisable as the settings file holds it
    assert proc.quote(argv).startswith("bwrap --die-with-parent")


def test_claudes_file_tools_are_denied_every_protected_place_whatever_it_is_called(
    tmp_path: Path,
) -> None:
    """Write and Edit run outside the Bash sandbox: the launch's settings deny them the same
    places by absolute path, a git dir that is not called `.git` included (the hook's path
    reading would not know it)."""
    from plan_build.startup import claudelayer

    work, elsewhere = tmp_path / "work", tmp_path / "store" / "project-git"
    elsewhere.parent.mkdir()
    subprocess.run(["git", "init", "-q", f"--separate-git-dir={elsewhere}", str(work)], check=True)
    repo = gitrepo.discover(work)
    policy = claudelayer.policy_for(repo, {"HOME": str(tmp_path / "home")})
    deny = claudelayer.settings("plan", policy=policy)["permissions"]["deny"]  # type: ignore[index]

    assert f"Edit(/{elsewhere.resolve()}/**)" in deny
    for path in policy.protected:
        assert f"Edit(/{path}/**)" in deny
    assert claudelayer.settings("plan", policy=None)[
        "permissions"
    ] == {  # unguarded: Bash rules only
        "deny": claudelayer.deny_rules(())
    }


def user_settings(value: object) -> Path:
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "plan-build" / "sandbox.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value))
    return path


def test_the_users_own_settings_widen_where_checks_may_write(session: Path, tmp_path: Path) -> None:
    cache = tmp_path / "tool-cache"
    cache.mkdir()
    user_settings({"writable": [str(cache)]})
    configure(
        session, [{"name": "cache", "argv": py(f"open({str(cache / 'c')!r}, 'w').write('x')")}]
    )

    assert verify(session)["command.cache"].status == "pass"
    assert (cache / "c").read_text() == "x"


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ({"writable": ["relative/dir"]}, "writable[0] is not an absolute path"),
        ({"writable": "/tmp"}, "`writable` must be a list of absolute paths"),
        ({"hosts": ["a b"]}, "hosts[0] is not a host name"),
        ({"network": "open"}, "must be an object with only `writable` and `hosts`"),
    ],
)
def test_broken_user_settings_are_refused_with_their_location(
    session: Path, value: object, said: str
) -> None:
    path = user_settings(value)
    with pytest.raises(PlanBuildError) as caught:
        sandbox.for_checks(session, dict(os.environ))
    assert caught.value.what.startswith(f"{path}: ")
    assert said in caught.value.what


def test_no_setting_makes_git_state_writable(session: Path) -> None:
    user_settings({"writable": [str(session / ".git" / "refs")]})
    with pytest.raises(PlanBuildError, match="would make git state writable"):
        sandbox.for_checks(session, dict(os.environ))


def test_a_tasks_verification_command_cannot_commit_and_the_evidence_says_why(
    repo: Path, stubs: Any, cli: Any
) -> None:
    """The plan is the agent's to write: a task's Verification command that commits runs under
    the same policy in `dispatch` (and in a wave's worktree), and moves nothing."""
    from tests.support.dispatching import codex_edits, make_plan

    tasks_md = make_plan(repo, verify="git commit -qam from-the-verification --allow-empty")
    head = git(repo, "rev-parse", "HEAD")
    codex_edits(stubs, {"src/app.py": "fixed\n"})

    r = cli("dispatch", "TASK-002", cwd=repo, env={"PLAN_BUILD_MEMORY_MODE": "degraded"})

    assert r.code == 6, r.stderr
    assert git(repo, "rev-parse", "HEAD") == head
    assert "checks run without access to git state" in tasks_md.read_text()


def test_status_names_the_verify_commands_this_session_changed(session: Path, cli: Any) -> None:
    configure(session, [{"name": "tests", "argv": py("print('ok')")}])
    git(session, "add", ".plan-build.yaml")
    git(session, "commit", "-qm", "config")
    r = gitrepo.discover(session)
    baseline.capture(r, session_id="s4")
    configure(session, [{"name": "tests", "argv": ["sh", "-c", "git push origin HEAD"]}])

    shown = cli("status", "--json", cwd=session, env={"PLAN_BUILD_SESSION": "s4"})

    assert shown.code == 0, shown.stderr
    assert json.loads(shown.stdout)["verify_commands_changed"] == [
        "tests: sh -c 'git push origin HEAD'"
    ]
    assert "verify commands changed in this session: tests: sh -c" in shown.stderr
