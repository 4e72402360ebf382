"""plan-build's hook program as Claude Code runs it: the exact command the settings layer
holds, through a real shell, with Claude's JSON on stdin. Every failure refuses (exit 2)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from plan_build.startup import claudelayer, gatehook

BASH = {"tool_name": "Bash", "tool_input": {"command": "git commit -m x"}, "cwd": "/tmp"}


def run_hook(
    event: str,
    payload: object,
    *,
    mode: str = "plan",
    program: str | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """The settings' command for `event`, run by sh as Claude runs it."""
    command = claudelayer.hook_command(event, mode=mode)
    full_env = {k: v for k, v in os.environ.items() if k != claudelayer.HOOK_ENV}
    if program is not None:
        full_env[claudelayer.HOOK_ENV] = program
    full_env.update(env or {})
    data = payload if isinstance(payload, str) else json.dumps(payload)
    return subprocess.run(
        ["sh", "-c", command],
        input=data,
        capture_output=True,
        text=True,
        env=full_env,
        timeout=30,
        check=False,
    )


def test_a_gated_command_is_refused_with_a_reason_for_the_model() -> None:
    r = run_hook("pre-bash", BASH, program=claudelayer.hook_program())
    assert r.returncode == 2
    assert "plan-build refused this command: `git commit` makes commits" in r.stderr
    assert "ask the user to run it in a terminal outside Claude Code" in r.stderr


@pytest.mark.parametrize(
    "command",
    [
        "git status",
        'echo "remember to git commit later"',
        'grep -rn "git commit" .',
        "cat > notes.md <<'EOF'\nremember: git commit after review\nEOF",
        "cat .git/HEAD",
        "ls .git/refs/heads",
        "ps -eo pid,comm,args | awk '$2 != \"claude\" && /codex exec/'",
    ],
)
def test_an_ordinary_command_passes_silently(command: str) -> None:
    payload = {**BASH, "tool_input": {"command": command}}
    r = run_hook("pre-bash", payload, program=claudelayer.hook_program())
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")


def test_discarding_uncommitted_work_is_refused_with_ask_the_user() -> None:
    payload = {**BASH, "tool_input": {"command": "git checkout -- ."}}
    r = run_hook("pre-bash", payload, program=claudelayer.hook_program())
    assert r.returncode == 2
    assert "`git checkout -- .` would throw away the user's uncommitted work" in r.stderr
    assert "Ask the user before discarding anything" in r.stderr


def test_the_hook_runs_isolated_with_only_the_parser_added() -> None:
    program = shlex.split(claudelayer.hook_program())
    assert program[1:4] == ["-I", "-S", "-c"]
    paths = claudelayer.parser_paths()
    assert paths  # this Python has tree-sitter (a pinned dependency)
    assert f"sys.path.extend({paths!r})" in program[4]


def test_a_shell_parser_that_cannot_load_refuses_with_the_reason() -> None:
    """A Python without tree-sitter (a release run by an interpreter that lacks it): every
    Bash call is refused, and the model reads why and that the other tools still work."""
    program = claudelayer.hook_program(parser=[])
    r = run_hook("pre-bash", {**BASH, "tool_input": {"command": "ls"}}, program=program)
    assert r.returncode == 2
    assert "plan-build's Bash check cannot load its shell parser" in r.stderr
    assert "tree-sitter==0.26.1 tree-sitter-bash==0.25.1" in r.stderr
    assert "every Bash command is refused" in r.stderr


@pytest.mark.parametrize("broken", ["unset", "missing", "not-executable", "crashing"])
def test_a_hook_that_cannot_start_or_crashes_refuses(tmp_path: Path, broken: str) -> None:
    program = {
        "unset": None,
        "missing": str(tmp_path / "no-such-python"),
        "not-executable": str(tmp_path / "python"),
        "crashing": f"{sys.executable} -I -S -c 'raise SystemExit(1)'",
    }[broken]
    (tmp_path / "python").write_text("#!/bin/sh\nexit 0\n")  # never chmod +x
    r = run_hook("pre-bash", {**BASH, "tool_input": {"command": "echo hi"}}, program=program)
    assert r.returncode == 2, (broken, r)


def test_a_package_that_fails_to_import_refuses(tmp_path: Path) -> None:
    program = claudelayer.hook_program().replace(
        repr(str(claudelayer.package_root())), repr(str(tmp_path))
    )
    r = run_hook("pre-bash", {**BASH, "tool_input": {"command": "echo hi"}}, program=program)
    assert r.returncode == 2
    assert "ModuleNotFoundError" in r.stderr


@pytest.mark.parametrize(
    "payload",
    ["", "not json", "[1, 2]", '{"tool_input": "x"}', '{"tool_input": {"command": 5}}', "\0"],
)
def test_garbage_on_stdin_refuses(payload: str) -> None:
    r = run_hook("pre-bash", payload, program=claudelayer.hook_program())
    assert r.returncode == 2, r
    assert "plan-build's hook" in r.stderr


def test_a_hook_that_cannot_decide_in_time_refuses() -> None:
    """stdin never closed: the hook's own deadline ends it with a refusal, well before the
    timeout Claude gives it."""
    env = {k: v for k, v in os.environ.items() if k != claudelayer.HOOK_ENV}
    env[claudelayer.HOOK_ENV] = claudelayer.hook_program()
    started = time.monotonic()
    with subprocess.Popen(
        ["sh", "-c", claudelayer.hook_command("pre-bash", mode="plan")],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    ) as p:
        assert p.stdin is not None
        assert p.stderr is not None
        code = p.wait(timeout=30)
        err = p.stderr.read()
        p.stdin.close()
    assert code == 2
    assert f"did not decide within {gatehook.DEADLINE:g} s" in err
    assert time.monotonic() - started < claudelayer.HOOK_TIMEOUT


def test_an_unknown_event_or_none_refuses() -> None:
    assert gatehook.run([], "{}")[0] == 2
    assert gatehook.run(["pre-everything"], "{}")[0] == 2


@pytest.mark.parametrize(
    ("path", "refused"),
    [
        (".git/HEAD", True),
        (".git/plan-build/claude/settings-0.json", True),
        (".claude/settings.json", True),
        (".claude/settings.local.json", True),
        ("sub/.claude/settings.json", True),
        (".claude/commands/x.md", False),
        ("src/app.py", False),
    ],
)
def test_the_file_tools_may_not_write_git_or_settings(
    tmp_path: Path, path: str, refused: bool
) -> None:
    payload = {"tool_name": "Write", "tool_input": {"file_path": path}, "cwd": str(tmp_path)}
    code, _, err = gatehook.run(["pre-edit", "--mode", "plan"], json.dumps(payload))
    assert (code == 2) == refused, err


def test_user_settings_in_claudes_config_dir_are_guarded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cfg"))
    payload = {"tool_input": {"file_path": str(tmp_path / "cfg" / "settings.json")}}
    assert gatehook.run(["pre-edit"], json.dumps(payload))[0] == 2


@pytest.mark.parametrize(
    ("source", "code"),
    [
        ("project_settings", 2),
        ("local_settings", 2),
        ("user_settings", 2),
        ("skills", 0),
        ("policy_settings", 0),
        (None, 2),
    ],
)
def test_config_changes_to_the_settings_files_are_not_applied(
    source: str | None, code: int
) -> None:
    payload = {"hook_event_name": "ConfigChange", "source": source}
    got, _, err = gatehook.run(["config"], json.dumps(payload))
    assert got == code, err
    if code == 2:
        assert "applies from the next session" in err


TASKS = """# Tasks

## TASK-001: Page
- Status: In Progress
- Dependencies: none

### Objective
x
### Scope
- src/audit/
### Prompt
x
### Acceptance criteria
x
### Tests
x
### Verification
- `true`

## TASK-002: Bill
- Status: Pending
- Dependencies: TASK-001

### Objective
x
### Scope
- src/billing.py
### Prompt
x
### Acceptance criteria
x
### Tests
x
### Verification
- `true`
"""


@pytest.mark.parametrize(
    ("path", "said"),
    [
        ("src/audit/page.py", None),
        ("SPEC.md", None),
        ("TASKS.md", None),
        ("docs/archive/2026/SPEC.md", None),
        ("src/billing.py", "outside the scope of TASK-001"),  # TASK-002 is not in progress
        ("README.md", "outside the scope of TASK-001"),
        ("../elsewhere.py", "outside the repository"),
    ],
)
def test_live_scope_speaks_only_outside_the_task_in_progress(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str, said: str | None
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "TASKS.md").write_text(TASKS)
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(repo))
    payload = {"tool_name": "Edit", "tool_input": {"file_path": path}, "cwd": str(repo)}
    code, out, err = gatehook.run(["post-edit", "--mode", "architect"], json.dumps(payload))
    assert code == 0, err
    if said is None:
        assert out == ""
    else:
        answer = json.loads(out)
        assert answer["decision"] == "block"
        assert said in answer["reason"]
        assert answer["hookSpecificOutput"]["additionalContext"] == answer["reason"]
    plan_mode = gatehook.run(["post-edit", "--mode", "plan"], json.dumps(payload))
    assert plan_mode == (0, "", "")


def test_live_scope_without_a_task_in_progress_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(tmp_path))
    payload = {"tool_input": {"file_path": "src/x.py"}, "cwd": str(tmp_path)}
    _, out, _ = gatehook.run(["post-edit", "--mode", "architect"], json.dumps(payload))
    assert "TASKS.md" in json.loads(out)["reason"]  # no TASKS.md: it cannot check, and says so


def test_live_scope_names_the_same_records_as_the_archive() -> None:
    from plan_build.startup import architectrecords, livescope

    assert livescope.RECORDS == architectrecords.RECORDS


@pytest.mark.parametrize(
    ("command", "said"),
    [
        ("echo 1 > src/audit/page.py", None),
        ("pytest -q > /dev/null 2>&1", None),
        ("git status", None),
        ("echo 1 > src/billing.py", "src/billing.py is outside"),
        ("cat x | tee -a notes.txt", "notes.txt is outside"),
        ("cp a.py src/other.py", "src/other.py is outside"),
        ("sed -i s/a/b/ README.md", "README.md is outside"),
        ("bash -c 'touch src/new.py'", "src/new.py is outside"),
        ("rm -rf src/legacy", "src/legacy is outside"),
        ("echo '# spec' >> SPEC.md", None),
    ],
)
def test_live_scope_reads_what_a_bash_command_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str, said: str | None
) -> None:
    (tmp_path / "TASKS.md").write_text(TASKS)
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(tmp_path))
    payload = {"tool_name": "Bash", "tool_input": {"command": command}, "cwd": str(tmp_path)}
    code, out, err = gatehook.run(["post-bash", "--mode", "architect"], json.dumps(payload))
    assert code == 0, err
    if said is None:
        assert out == ""
    else:
        assert said in json.loads(out)["reason"]


def test_live_scope_keeps_the_scopes_until_tasks_md_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, state = tmp_path / "repo", tmp_path / "state"
    (state / "claude").mkdir(parents=True)
    repo.mkdir()
    (repo / "TASKS.md").write_text(TASKS)
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(repo))
    args = ["post-edit", "--mode", "architect", "--state", str(state)]

    def said(path: str) -> str:
        payload = {"tool_input": {"file_path": path}, "cwd": str(repo)}
        return gatehook.run(args, json.dumps(payload))[1]

    assert said("src/billing.py") != ""
    kept = json.loads((state / "claude" / "scopes.json").read_text())
    assert kept["tasks"] == [["TASK-001", ["src/audit/"]]]
    assert said("src/audit/x.py") == ""  # answered from the cache
    # TASK-002 starts: TASKS.md changes, so the cache is read again from the file
    (repo / "TASKS.md").write_text(TASKS.replace("- Status: Pending", "- Status: In Progress"))
    assert said("src/billing.py") == ""
    assert said("src/elsewhere.py") != ""


def test_a_release_takes_the_parser_from_the_python_that_runs_it(real_bundle: Any) -> None:
    """A release's zipapp cannot hold tree-sitter's compiled code (release/dependencies.py);
    run by a Python that has it, the hook finds it there and judges as from a checkout."""
    assert {"tree_sitter", "tree_sitter_bash"} <= set(real_bundle.not_bundled)
    pyz = str(real_bundle.directory / "plan-build.pyz")
    exports = (
        f"import sys; sys.path.insert(0, {pyz!r}); "
        "from plan_build.startup import claudelayer; "
        "print(claudelayer.package_root()); print(claudelayer.hook_program())"
    )
    out = subprocess.run(
        [sys.executable, "-c", exports], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out[0] == pyz  # the release's own code answers
    note = {**BASH, "tool_input": {"command": 'echo "remember to git commit later"'}}
    assert run_hook("pre-bash", note, program=out[1]).returncode == 0
    r = run_hook("pre-bash", BASH, program=out[1])
    assert r.returncode == 2
    assert "`git commit` makes commits" in r.stderr
