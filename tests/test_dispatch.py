"""`plan-build dispatch TASK-ID`: what the architect (and the user) see for each outcome.

Codex is a stub on PATH that edits files in the repository and prints the `--json` event
stream; verification is a real command (a small Python script) that records when it ran.
"""

from __future__ import annotations

import io
import itertools
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from plan_build.core.context import Session
from plan_build.core.resources import locate
from plan_build.core.ui import Console
from plan_build.dispatch import recipe as recipes
from plan_build.dispatch import runner as dispatch
from plan_build.dispatch import taskfile, telemetry
from tests.support.dispatching import (
    PLAN,
    codex_edits,
    codex_runs,
    events,
    make_plan,
    sequence,
    status_of,
    without_owned,
)
from tests.support.gitcmd import git
from tests.support.interaction import ScriptedInteraction
from tests.support.paths import ROOT
from tests.support.stubs import Stubs

DEGRADED = {"PLAN_BUILD_MEMORY_MODE": "degraded"}


def state_dir(repo: Path) -> Path:
    return repo / ".git" / "plan-build"


def records(repo: Path, kind: str) -> list[dict[str, Any]]:
    rows, bad = telemetry.read(state_dir(repo))
    assert bad == 0
    return [r for r in rows if r["kind"] == kind]


def session_for(repo: Path, env: dict[str, str] | None = None) -> tuple[Session, io.StringIO]:
    full = dict(os.environ)
    full.update(env or DEGRADED)
    err = io.StringIO()
    return (
        Session(
            cwd=repo,
            env=full,
            console=Console(stream=err, fancy=False),
            ui=ScriptedInteraction(),
            resources=locate(full),
            stdout=io.StringIO(),
        ),
        err,
    )


def quick_recipe(codex: int = 60, verification: int = 60) -> recipes.Recipe:
    return recipes.Recipe(
        id="test-quick",
        roles=recipes.RECIPE.roles,
        limits=recipes.Limits(
            max_corrections=2,
            codex_timeout_seconds=codex,
            verification_timeout_seconds=verification,
        ),
    )


# ----------------------------------------------------------------------------- success


def test_a_task_codex_completes_in_scope_goes_to_review(repo: Path, stubs: Stubs, cli) -> None:
    tasks_md = make_plan(repo)
    before = tasks_md.read_text()
    codex_edits(stubs, {"src/app.py": "fixed\n", "tests/test_page.py": "def test(): pass\n"})

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    assert r.code == 0, r.stderr
    assert "TASK-002 -> Review · verified on attempt 1" in r.stderr
    assert status_of(tasks_md, "TASK-002") == "Review"
    # every byte plan-build does not own is unchanged
    after = tasks_md.read_text()
    assert without_owned(after) == without_owned(before)
    assert "Outcome: Review · verified on attempt 1 of 3" in after
    assert "Changed: `src/app.py`, `tests/test_page.py` (all in scope)" in after
    assert "exit 0 (pass)" in after
    # the change stays uncommitted for review
    assert git(repo, "status", "--porcelain").splitlines() == [
        " M TASKS.md",
        " M src/app.py",
        "?? tests/",
    ]


def test_codex_gets_the_fixed_recipe_closed_stdin_and_the_environment(
    repo: Path, stubs: Stubs, cli
) -> None:
    make_plan(repo)
    codex_edits(stubs, {"src/app.py": "fixed\n"})

    r = cli(
        "dispatch",
        "TASK-002",
        cwd=repo,
        env={**DEGRADED, "AGENTMEMORY_PROJECT_NAME": "github.com/ana/shop", "SHOP_FLAG": "1"},
    )

    assert r.code == 0, r.stderr
    [call] = codex_runs(stubs)
    argv = call["argv"]
    assert argv[:-3] == [
        "exec",
        "--sandbox",
        "workspace-write",
        "-m",
        "gpt-5.5",
        "-c",
        'model_reasoning_effort="high"',
        "--json",
    ]
    assert argv[-3] == "-o"
    assert Path(argv[-2]).is_relative_to(state_dir(repo).resolve())
    assert call["stdin_tty"] is False
    assert call["cwd"] == str(repo)
    # the launcher's environment reaches Codex unchanged
    assert call["env"]["AGENTMEMORY_PROJECT_NAME"] == "github.com/ana/shop"
    assert call["env"]["SHOP_FLAG"] == "1"
    assert call["env"]["PLAN_BUILD_MEMORY_MODE"] == "degraded"
    prompt = argv[-1]
    assert prompt.startswith("# TASK-002: Paginate the audit log\n")
    for expected in (
        "AgentMemory project: `github.com/ana/shop`",
        "`SPEC.md`",
        "Complete: TASK-001 Add the audit log model",
        "Next after this task: TASK-003 Export the audit log",
        "Add pagination to the audit log view in src/app.py.\n## Steps\n",
        "- `src/app.py`\n- `tests/**`\n",
        "No git commit, stage (git add), push, reset, restore",
        "No edits, new files or deletions outside the allowed scope.",
        "SCOPE EXPANSION NEEDED:",
    ):
        assert expected in prompt


def test_telemetry_records_the_dispatch_with_reported_usage(repo: Path, stubs: Stubs, cli) -> None:
    make_plan(repo)
    codex_edits(stubs, {"src/app.py": "fixed\n"})

    assert cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED).code == 0

    [attempt] = records(repo, "attempt")
    assert attempt["task"] == "TASK-002"
    assert attempt["role"] == "implementer"
    assert attempt["model"] == "gpt-5.5"
    assert attempt["reasoning"] == "high"
    assert attempt["codex"]["exit"] == 0
    assert attempt["codex"]["thread_id"] == "01a22a0c-1f0b-7461-8cfe-43e314f760ae"
    # Codex's own figures, each field as it reported it, and input + output as the total
    assert attempt["usage"] == {
        "input": 1200,
        "cached_input": 200,
        "cache_write_input": 0,
        "output": 300,
        "reasoning_output": 40,
        "total": 1500,
    }
    assert attempt["verification"]["passed"] is True
    assert attempt["recipe"] == {
        "id": recipes.RECIPE.id,
        "fingerprint": recipes.RECIPE.fingerprint,
    }
    [summary] = records(repo, "dispatch")
    assert summary["outcome"] == "Review"
    assert summary["attempts"] == 1
    assert summary["exhausted"] is False
    assert summary["usage_sum"]["total"] == 1500
    assert (summary["usage_sum"]["runs"], summary["usage_sum"]["unknown_runs"]) == (1, 0)
    assert (
        "1,500 tokens (in 1,200, cached 200, out 300, reasoning 40)"
        in (repo / "TASKS.md").read_text()
    )
    # no prompt text, no output, no environment in the log
    raw = (state_dir(repo) / "telemetry" / "dispatch.jsonl").read_text()
    assert "Paginate" not in raw
    assert "STUB_HOME" not in raw


def test_telemetry_names_the_session_the_dispatch_ran_in(repo: Path, stubs: Stubs, cli) -> None:
    """From the session's Claude (PLAN_BUILD_SESSION set) both records carry the session's id,
    which the report goes by; run by hand they carry null, and a value that is not a session
    id is not recorded."""
    make_plan(repo)
    codex_edits(stubs, {"src/app.py": "fixed\n"})
    assert (
        cli("dispatch", "TASK-002", cwd=repo, env={**DEGRADED, "PLAN_BUILD_SESSION": "s1"}).code
        == 0
    )
    assert [r["session"] for r in records(repo, "attempt")] == ["s1"]
    assert [r["session"] for r in records(repo, "dispatch")] == ["s1"]
    assert telemetry.session_of({}) is None
    assert telemetry.session_of({"PLAN_BUILD_SESSION": "a b;rm -rf"}) is None
    assert telemetry.session_of({"PLAN_BUILD_SESSION": "x" * 65}) is None
    assert telemetry.session_of({"PLAN_BUILD_SESSION": " 20261203-120000-abc123 "}) == (
        "20261203-120000-abc123"
    )


def test_token_usage_missing_from_the_stream_is_unknown(repo: Path, stubs: Stubs, cli) -> None:
    make_plan(repo)
    codex_edits(stubs, {"src/app.py": "fixed\n"}, usage=False)

    assert cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED).code == 0

    [attempt] = records(repo, "attempt")
    assert attempt["usage"] is None  # unknown, never 0
    summed = records(repo, "dispatch")[0]["usage_sum"]
    assert (summed["total"], summed["runs"], summed["unknown_runs"]) == (None, 1, 1)
    assert "tokens unknown" in (repo / "TASKS.md").read_text()


# ----------------------------------------------------------------------------- scope


def test_an_edit_outside_the_scope_blocks_and_leaves_the_diff(
    repo: Path, stubs: Stubs, cli
) -> None:
    tasks_md = make_plan(repo)
    codex_edits(stubs, {"src/app.py": "fixed\n", "config/settings.py": "DEBUG = True\n"})

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    assert r.code == 6
    assert "TASK-002 -> Blocked · scope expansion needed" in r.stderr
    assert "outside the scope: config/settings.py" in r.stderr
    assert "the diff is left in the work tree" in r.stderr
    assert (repo / "config" / "settings.py").read_text() == "DEBUG = True\n"
    assert (repo / "src" / "app.py").read_text() == "fixed\n"
    assert status_of(tasks_md, "TASK-002") == "Blocked"
    text = tasks_md.read_text()
    assert "Outcome: Blocked · scope expansion needed" in text
    assert "Outside the scope: `config/settings.py`" in text
    assert "Verification: not run" in text
    # no verification and no correction after a scope violation
    assert sequence(stubs) == ["codex"]


def test_tasks_md_is_never_in_scope(repo: Path, stubs: Stubs, cli) -> None:
    text = PLAN.replace("- `tests/**` (new tests go here)", "- `*.md`").replace("{verify}", "true")
    tasks_md = make_plan(repo, text=text)
    # Codex "completes" the task by editing the plan itself; `*.md` would allow that file
    stubs.rule(
        "codex",
        {
            "match": ["exec"],
            "write": {
                "TASKS.md": tasks_md.read_text().replace("Status: Pending", "Status: Complete", 1)
            },
            "stdout": events(),
        },
    )

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    assert r.code == 6
    assert "outside the scope: TASKS.md" in r.stderr


def test_codex_asking_for_more_scope_blocks_without_verifying(
    repo: Path, stubs: Stubs, cli
) -> None:
    tasks_md = make_plan(repo)
    codex_edits(
        stubs,
        {},
        message="I stopped.\nSCOPE EXPANSION NEEDED: src/models.py - the page size lives there",
    )

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    assert r.code == 6
    assert "Codex reported the task needs files outside the allowed scope" in r.stderr
    assert sequence(stubs) == ["codex"]
    assert "Codex asked: SCOPE EXPANSION NEEDED: src/models.py" in tasks_md.read_text()


def test_a_commit_by_codex_blocks_the_task(repo: Path, stubs: Stubs, cli) -> None:
    tasks_md = make_plan(repo)
    # a Codex that ignores the prohibition: edits in scope, then commits
    exe = stubs.bin / "codex"
    exe.write_text(
        f"#!{sys.executable}\n"
        "import subprocess, sys\n"
        "open('src/app.py', 'w').write('fixed\\n')\n"
        "subprocess.run(['git', 'commit', '-qam', 'sneaky'], check=True)\n"
        f"sys.stdout.write({events()!r})\n"
    )
    exe.chmod(0o755)

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    assert r.code == 6
    assert "Codex changed git state (HEAD or the index)" in r.stderr
    assert "HEAD moved from" in tasks_md.read_text()
    assert "undo what Codex committed or staged yourself" in r.stderr


# ----------------------------------------------------------------------------- corrections


def test_failed_verification_gets_one_focused_correction_then_review(
    repo: Path, stubs: Stubs, cli
) -> None:
    tasks_md = make_plan(repo)
    codex_edits(stubs, {"src/app.py": "fixed\n"}, message="Fixed the boundary.")
    codex_edits(stubs, {"src/app.py": "broken\n"}, times=1)

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    assert r.code == 0, r.stderr
    assert sequence(stubs) == ["codex", "verify", "codex", "verify"]
    first, second = codex_runs(stubs)
    assert 'model_reasoning_effort="high"' in first["argv"]
    assert 'model_reasoning_effort="medium"' in second["argv"]  # the corrector's recipe
    correction = second["argv"][-1]
    assert correction.startswith("# TASK-002: correction 1 of 2 (Paginate the audit log)")
    assert "FAILED tests/test_page.py::test_page_two - assert 0 == 51" in correction
    assert "1 failed" in correction
    assert "- `src/app.py`" in correction
    assert "do not weaken or delete tests" in correction
    text = tasks_md.read_text()
    assert "Outcome: Review · verified on attempt 2 of 3" in text
    assert "Attempt 1 · implementer" in text
    assert "Attempt 2 · corrector" in text
    assert "exit 1 (FAIL)" in text
    assert [a["outcome"] for a in records(repo, "attempt")] == [
        "verification_failed",
        "verified",
    ]


def test_verification_that_keeps_failing_is_blocked_after_two_corrections(
    repo: Path, stubs: Stubs, cli
) -> None:
    tasks_md = make_plan(repo)
    codex_edits(stubs, {"src/app.py": "still broken\n"})

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    assert r.code == 6
    assert "verification still fails after the last allowed correction" in r.stderr
    # initial attempt + two corrections, every one of them verified, nothing after the last
    assert sequence(stubs) == ["codex", "verify"] * 3
    assert status_of(tasks_md, "TASK-002") == "Blocked"
    text = tasks_md.read_text()
    assert text.count("exit 1 (FAIL)") == 3
    assert "FAILED tests/test_page.py::test_page_two" in text  # diagnostics kept
    assert (repo / "src" / "app.py").read_text() == "still broken\n"  # partial diff kept
    [summary] = records(repo, "dispatch")
    assert summary["exhausted"] is True
    assert summary["attempts"] == 3
    assert summary["corrections"] == 2


def test_every_correction_is_followed_by_a_verification(repo: Path, stubs: Stubs) -> None:
    """Whatever the verifier says, Codex never runs twice in a row and never runs last."""
    make_plan(repo)
    for outcome in ("still broken\n", "fixed\n"):
        for fails in range(4):
            (stubs.home / "calls.jsonl").unlink(missing_ok=True)
            (stubs.home / "codex.json").unlink(missing_ok=True)
            (stubs.home / "codex.counts.json").unlink(missing_ok=True)
            git(repo, "checkout", "-q", "--", ".")
            git(repo, "clean", "-qfd", "src", "tests")
            codex_edits(stubs, {"src/app.py": outcome})
            if fails:
                codex_edits(stubs, {"src/app.py": "broken\n"}, times=fails)
            session, _ = session_for(repo)
            result = dispatch.run(session, "TASK-002")
            seq = sequence(stubs)
            assert seq[-1] == "verify"
            assert ("codex", "codex") not in set(itertools.pairwise(seq))
            assert seq.count("codex") <= 3
            expect_review = outcome == "fixed\n" and fails <= 2
            assert result.status == ("Review" if expect_review else "Blocked")


# ----------------------------------------------------------------------------- Codex trouble


def test_codex_that_hangs_is_stopped_at_the_time_limit(repo: Path, stubs: Stubs) -> None:
    tasks_md = make_plan(repo)
    stubs.rule("codex", {"match": ["exec"], "sleep": 60, "grandchild": True})
    session, err = session_for(repo)

    started = time.monotonic()
    result = dispatch.run(session, "TASK-002", recipe=quick_recipe(codex=2))

    assert time.monotonic() - started < 30
    assert result.status == "Blocked"
    assert result.reason == "codex_timeout"
    assert "Codex did not finish within the time limit" in err.getvalue()
    grandchild = int((stubs.home / "codex.grandchild").read_text())
    assert not psutil.pid_exists(grandchild) or (
        psutil.Process(grandchild).status() == psutil.STATUS_ZOMBIE
    )
    assert sequence(stubs) == ["codex"]  # no verification of a run that never finished
    assert "codex stopped after" in tasks_md.read_text()


def test_codex_exiting_with_an_error_blocks_with_its_message(repo: Path, stubs: Stubs, cli) -> None:
    tasks_md = make_plan(repo)
    stubs.rule(
        "codex",
        {
            "match": ["exec"],
            "stdout": events(failed="unexpected status 401 Unauthorized"),
            "exit": 1,
        },
    )

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    assert r.code == 6
    assert "Codex exited with an error" in r.stderr
    assert "check that codex works (codex login status; network)" in r.stderr
    assert "Codex reported: unexpected status 401 Unauthorized" in tasks_md.read_text()
    assert sequence(stubs) == ["codex"]
    assert records(repo, "attempt")[0]["codex"]["exit"] == 1


def test_codex_printing_nothing_is_blocked(repo: Path, stubs: Stubs, cli) -> None:
    make_plan(repo)
    stubs.rule("codex", {"match": ["exec"], "stdout": ""})

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    assert r.code == 6
    assert "Codex printed no events" in r.stderr
    attempt = records(repo, "attempt")[0]
    assert attempt["usage"] is None
    assert attempt["codex"]["thread_id"] == "unknown"


def test_a_hanging_verification_command_is_stopped_and_counts_as_failed(
    repo: Path, stubs: Stubs
) -> None:
    tasks_md = make_plan(repo, verify="sleep 30")
    codex_edits(stubs, {"src/app.py": "fixed\n"})
    session, err = session_for(repo)

    started = time.monotonic()
    result = dispatch.run(session, "TASK-002", recipe=quick_recipe(verification=1))

    assert time.monotonic() - started < 30
    assert result.status == "Blocked"
    assert result.reason == "corrections_exhausted"
    assert len(codex_runs(stubs)) == 3
    assert "stopped after 1s (FAIL)" in tasks_md.read_text()
    assert "did not finish within 1s and was stopped" in codex_runs(stubs)[1]["argv"][-1]
    assert "stopped after 1s" in err.getvalue()


def test_codex_not_installed_exits_3_and_changes_nothing(repo: Path, stubs: Stubs, cli) -> None:
    tasks_md = make_plan(repo)
    before = tasks_md.read_bytes()
    stubs.remove("codex")
    path = os.pathsep.join([str(stubs.bin), str(Path(sys.executable).parent), "/usr/bin", "/bin"])
    if any((Path(d) / "codex").exists() for d in path.split(os.pathsep)):
        pytest.skip("a real codex is on PATH")

    r = cli("dispatch", "TASK-002", cwd=repo, env={**DEGRADED, "PATH": path})

    assert r.code == 3
    assert "codex is not installed or not on PATH" in r.stderr
    assert tasks_md.read_bytes() == before


# ----------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("task", "expected"),
    [
        ("TASK-009", "TASK-009 is not in TASKS.md (tasks: TASK-001, TASK-002, TASK-003)"),
        ("task-2", "'task-2' is not a task id"),
        ("TASK-003", "TASK-003 depends on TASK-002, which is Pending"),
        ("TASK-001", "TASK-001 is already Complete"),
    ],
)
def test_tasks_that_cannot_run_now_are_refused(
    repo: Path, stubs: Stubs, cli, task: str, expected: str
) -> None:
    tasks_md = make_plan(repo)
    before = tasks_md.read_bytes()

    r = cli("dispatch", task, cwd=repo, env=DEGRADED)

    assert r.code == 2
    assert expected in r.stderr
    assert "fix:" in r.stderr
    assert tasks_md.read_bytes() == before
    assert codex_runs(stubs) == []


def test_the_bad_id_hint_suggests_the_canonical_form(repo: Path, stubs: Stubs, cli) -> None:
    make_plan(repo)
    r = cli("dispatch", "task-2", cwd=repo, env=DEGRADED)
    assert "fix: use the id from TASKS.md, e.g. TASK-002" in r.stderr


def test_another_task_in_progress_is_refused(repo: Path, stubs: Stubs, cli) -> None:
    text = PLAN.replace("- **Status:** Complete", "- **Status:** In Progress")
    tasks_md = make_plan(repo, text=text.replace("{verify}", "true"))
    text2 = tasks_md.read_text().replace("Dependencies: TASK-001", "Dependencies: none")
    tasks_md.write_text(text2)

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    assert r.code == 2
    assert "TASK-001 is In Progress; only one task may be" in r.stderr
    assert "resume it with: plan-build dispatch TASK-001" in r.stderr


def test_lint_errors_in_the_task_stop_the_dispatch_with_lines(
    repo: Path, stubs: Stubs, cli
) -> None:
    text = PLAN.replace("{verify}", "pytest -q | tee log")
    make_plan(repo, text=text)
    line = text.splitlines().index("pytest -q | tee log") + 1

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    assert r.code == 2
    assert "TASKS.md has problems that stop TASK-002" in r.stderr
    assert f"TASKS.md:{line}: TASK-002: verification command 'pytest -q | tee log' uses" in r.stderr
    assert codex_runs(stubs) == []


def test_a_credential_in_the_task_prompt_is_refused_before_anything_runs(
    repo: Path, stubs: Stubs, cli
) -> None:
    text = PLAN.replace(
        "Add a page parameter.", "Use the key AKIAIOSFODNN7EXAMPLE for the bucket."
    ).replace("{verify}", "true")
    tasks_md = make_plan(repo, text=text)
    before = tasks_md.read_bytes()

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    assert r.code == 2
    assert "contains what looks like a credential" in r.stderr
    assert "AWS Access Key" in r.stderr
    assert "AKIAIOSFODNN7EXAMPLE" not in r.stderr
    assert tasks_md.read_bytes() == before
    assert codex_runs(stubs) == []


def test_a_credential_in_verification_output_never_reaches_codex_or_tasks_md(
    repo: Path, stubs: Stubs, cli
) -> None:
    leak = repo.parent / "leak.py"
    leak.write_text(
        "import sys\nprint('token ghp_abcdefghijklmnopqrstuvwxyz0123456789')\nsys.exit(1)\n"
    )
    tasks_md = make_plan(repo, verify=f"{sys.executable} {leak}")
    codex_edits(stubs, {"src/app.py": "x\n"})

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    assert r.code == 6
    correction = codex_runs(stubs)[1]["argv"][-1]
    assert "ghp_abcdefghijklmnopqrstuvwxyz0123456789" not in correction
    assert "line withheld by plan-build: looks like a credential (GitHub Token)" in correction
    assert "ghp_abcdefghijklmnopqrstuvwxyz0123456789" not in tasks_md.read_text()


# ----------------------------------------------------------------------------- blocked, redispatch


def test_a_blocked_task_is_not_redispatched_unchanged(repo: Path, stubs: Stubs, cli) -> None:
    tasks_md = make_plan(repo)
    codex_edits(stubs, {"src/app.py": "fixed\n", "config/settings.py": "x\n"})
    assert cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED).code == 6

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)
    assert r.code == 2
    assert "TASK-002 is Blocked (scope expansion needed" in r.stderr
    assert "has not changed since" in r.stderr

    # the architect widens the scope after the user approves; dispatch runs again
    tasks_md.write_text(
        tasks_md.read_text().replace("- `tests/**` (new tests go here)", "- `tests/**`\n- config/")
    )
    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)
    assert r.code == 0, r.stderr
    assert status_of(tasks_md, "TASK-002") == "Review"
    assert tasks_md.read_text().count("<!-- plan-build:dispatch ") == 4  # two blocks kept
    # the second prompt knows about the first run
    assert "dispatched before (1 time; last outcome: Blocked)" in codex_runs(stubs)[-1]["argv"][-1]


def test_a_task_in_review_can_be_dispatched_again_for_review_fixes(
    repo: Path, stubs: Stubs, cli
) -> None:
    tasks_md = make_plan(repo)
    codex_edits(stubs, {"src/app.py": "fixed\n"})
    assert cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED).code == 0
    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)
    assert r.code == 0, r.stderr
    assert status_of(tasks_md, "TASK-002") == "Review"


# ----------------------------------------------------------------------------- Ctrl-C


def test_ctrl_c_stops_codex_and_leaves_a_resumable_task(repo: Path, stubs: Stubs, cli) -> None:
    tasks_md = make_plan(repo)
    stubs.rule(
        "codex",
        {
            "match": ["exec"],
            "write": {"src/app.py": "half done\n"},
            "sleep": 60,
            "grandchild": True,
            "times": 1,
        },
    )
    env = dict(os.environ, **DEGRADED)
    child = subprocess.Popen(
        [sys.executable, "-m", "plan_build", "dispatch", "TASK-002"],
        cwd=repo,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    pid_file = stubs.home / "codex.grandchild"
    deadline = time.monotonic() + 30
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)
    codex_pid = int((stubs.home / "codex.pid").read_text())
    grandchild = int(pid_file.read_text())

    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=30)

    assert child.returncode == 130, err
    assert "interrupted" in err
    for pid in (codex_pid, grandchild):
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert status_of(tasks_md, "TASK-002") == "In Progress"
    text = tasks_md.read_text()
    assert "Outcome: In Progress · interrupted by Ctrl-C during attempt 1 (codex)" in text
    assert "rerun `plan-build dispatch TASK-002`" in text
    assert (repo / "src" / "app.py").read_text() == "half done\n"  # work kept
    assert not (state_dir(repo) / "dispatch" / "lock").exists()
    assert records(repo, "dispatch")[0]["outcome"] == "In Progress"

    # resuming is a plain rerun
    codex_edits(stubs, {"src/app.py": "fixed\n"})
    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)
    assert r.code == 0, r.stderr
    assert status_of(tasks_md, "TASK-002") == "Review"


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP"])
def test_a_termination_signal_is_handled_like_ctrl_c(
    repo: Path, stubs: Stubs, signame: str
) -> None:
    """A caller's timeout (SIGTERM) or a closed terminal (SIGHUP) must not leave Codex
    running on its own."""
    tasks_md = make_plan(repo)
    stubs.rule("codex", {"match": ["exec"], "sleep": 60})
    env = dict(os.environ, **DEGRADED)
    child = subprocess.Popen(
        [sys.executable, "-m", "plan_build", "dispatch", "TASK-002"],
        cwd=repo,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    pid_file = stubs.home / "codex.pid"
    deadline = time.monotonic() + 30
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)
    codex_pid = int(pid_file.read_text())

    child.send_signal(getattr(signal, signame))
    _, err = child.communicate(timeout=30)

    assert child.returncode == 130, err
    assert not psutil.pid_exists(codex_pid) or (
        psutil.Process(codex_pid).status() == psutil.STATUS_ZOMBIE
    )
    assert f"interrupted by {signame} during attempt 1 (codex)" in tasks_md.read_text()
    assert status_of(tasks_md, "TASK-002") == "In Progress"


def test_codex_deleting_tasks_md_is_undone_and_reported(repo: Path, stubs: Stubs, cli) -> None:
    tasks_md = make_plan(repo)
    codex_edits(stubs, {"src/app.py": "fixed\n"}, delete=["TASKS.md"])

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    assert r.code == 6
    assert "outside the scope: TASKS.md" in r.stderr
    # plan-build owns TASKS.md during a dispatch: its own version is back, with the outcome
    assert status_of(tasks_md, "TASK-002") == "Blocked"
    text = tasks_md.read_text()
    assert "Outcome: Blocked · scope expansion needed" in text
    assert "`TASKS.md` was changed by Codex; plan-build owns it" in text
    assert (
        "Changed since the dispatch began: `src/app.py`, `TASKS.md (Codex's edit undone)`" in text
    )


def test_a_live_dispatch_holds_the_lock(repo: Path, stubs: Stubs, cli) -> None:
    make_plan(repo)
    lock = state_dir(repo) / "dispatch" / "lock"
    lock.parent.mkdir(parents=True)
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        lock.write_text(json.dumps({"pid": sleeper.pid, "task": "TASK-002"}))
        r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)
        assert r.code == 2
        assert f"another dispatch is running (TASK-002, pid {sleeper.pid})" in r.stderr
    finally:
        sleeper.kill()
        sleeper.wait()
    # a lock left by a dead process is stale and taken over
    codex_edits(stubs, {"src/app.py": "fixed\n"})
    assert cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED).code == 0


def test_a_lock_whose_pid_now_names_another_process_does_not_block(
    repo: Path, stubs: Stubs, cli
) -> None:
    """The dispatch that wrote the lock died and its pid was handed to an unrelated process:
    the start time in the record no longer matches, so the lock is stale."""
    make_plan(repo)
    lock = state_dir(repo) / "dispatch" / "lock"
    lock.parent.mkdir(parents=True)
    stranger = os.getppid()  # alive, and not a dispatch
    started = psutil.Process(stranger).create_time() - 100
    lock.write_text(json.dumps({"pid": stranger, "started": started, "task": "TASK-002"}))
    codex_edits(stubs, {"src/app.py": "fixed\n"})

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    assert r.code == 0, r.stderr
    assert "another dispatch is running" not in r.stderr
    assert psutil.pid_exists(stranger)
    assert not lock.exists()


# ----------------------------------------------------------------------------- recipe


def test_the_first_dispatch_pins_the_recipe_and_a_different_one_is_refused(
    repo: Path, stubs: Stubs, cli
) -> None:
    tasks_md = make_plan(repo)
    codex_edits(stubs, {"src/app.py": "fixed\n"})
    pin = state_dir(repo) / "dispatch" / "recipe.json"
    pinned = {**recipes.describe()}
    pinned["roles"] = json.loads(json.dumps(pinned["roles"]))
    pinned["roles"]["implementer"]["model"] = "gpt-5.4"
    pinned["fingerprint"] = "sha256:" + "0" * 64
    pin.parent.mkdir(parents=True)
    pin.write_text(json.dumps(pinned))
    before = tasks_md.read_bytes()

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    assert r.code == 3
    assert "the Codex recipe differs from the one pinned for this repository" in r.stderr
    assert 'roles.implementer.model: "gpt-5.4" → "gpt-5.5"' in r.stderr
    assert "plan-build dispatch TASK-002 --accept-recipe" in r.stderr
    assert tasks_md.read_bytes() == before

    r = cli("dispatch", "TASK-002", "--accept-recipe", cwd=repo, env=DEGRADED)
    assert r.code == 0, r.stderr
    assert json.loads(pin.read_text())["fingerprint"] == recipes.RECIPE.fingerprint


def test_dry_run_prints_argv_and_prompt_and_changes_nothing(repo: Path, stubs: Stubs, cli) -> None:
    tasks_md = make_plan(repo)
    before = tasks_md.read_bytes()

    r = cli("dispatch", "TASK-002", "--dry-run", cwd=repo, env=DEGRADED)

    assert r.code == 0, r.stderr
    assert r.stdout.startswith(
        "argv: codex exec --sandbox workspace-write -m gpt-5.5 -c "
        "'model_reasoning_effort=\"high\"' --json -o "
    )
    assert "# TASK-002: Paginate the audit log" in r.stdout
    assert "would dispatch TASK-002 (status Pending → In Progress)" in r.stdout
    assert tasks_md.read_bytes() == before
    assert codex_runs(stubs) == []
    assert not (state_dir(repo) / "dispatch" / "recipe.json").exists()


def test_json_output_describes_the_outcome(repo: Path, stubs: Stubs, cli) -> None:
    make_plan(repo)
    codex_edits(stubs, {"src/app.py": "fixed\n"})

    r = cli("dispatch", "TASK-002", "--json", cwd=repo, env=DEGRADED)

    assert r.code == 0
    out = json.loads(r.stdout)
    assert out["status"] == "Review"
    assert out["reason"] == "verified"
    assert out["changed"] == ["src/app.py"]
    assert out["attempts"][0]["verification"][0]["exit"] == 0
    assert out["recipe"]["fingerprint"] == recipes.RECIPE.fingerprint


# ----------------------------------------------------------------------------- memory


def test_required_memory_mode_includes_the_workflow_status_slot(
    repo: Path, stubs: Stubs, cli, memory_server
) -> None:
    make_plan(repo)
    memory_server.state.secret = "s3cret-bearer-value"
    memory_server.state.slots["workflow_status"] = (
        "Project: github.com/ana/shop\nPhase: execution\nNext step: TASK-002"
    )
    codex_edits(stubs, {"src/app.py": "fixed\n"})

    r = cli(
        "dispatch",
        "TASK-002",
        cwd=repo,
        env={"PLAN_BUILD_MEMORY_MODE": "required", "AGENTMEMORY_SECRET": "s3cret-bearer-value"},
    )

    assert r.code == 0, r.stderr
    prompt = codex_runs(stubs)[0]["argv"][-1]
    assert "recall this project's history from AgentMemory yourself" in prompt
    assert "```text\nProject: github.com/ana/shop\nPhase: execution\nNext step: TASK-002\n```" in (
        prompt
    )
    assert "s3cret-bearer-value" not in prompt
    assert ("/agentmemory/slot?label=workflow_status", "Bearer s3cret-bearer-value") in (
        memory_server.state.requests
    )


def test_another_projects_checkpoint_is_never_passed_on(
    repo: Path, stubs: Stubs, cli, memory_server
) -> None:
    make_plan(repo)
    memory_server.state.slots["workflow_status"] = "Project: github.com/bob/other\nPhase: done"
    codex_edits(stubs, {"src/app.py": "fixed\n"})

    r = cli("dispatch", "TASK-002", cwd=repo, env={"PLAN_BUILD_MEMORY_MODE": "required"})

    assert r.code == 0, r.stderr
    prompt = codex_runs(stubs)[0]["argv"][-1]
    assert "Phase: done" not in prompt
    assert "belongs to another project (`github.com/bob/other`)" in prompt


def test_required_mode_says_so_when_the_slot_cannot_be_read(
    repo: Path, stubs: Stubs, cli, memory_server
) -> None:
    make_plan(repo)
    memory_server.state.slots_enabled = False
    codex_edits(stubs, {"src/app.py": "fixed\n"})

    r = cli("dispatch", "TASK-002", cwd=repo, env={"PLAN_BUILD_MEMORY_MODE": "required"})

    assert r.code == 0, r.stderr
    assert "warning: the workflow_status checkpoint is unavailable" in r.stderr
    prompt = codex_runs(stubs)[0]["argv"][-1]
    assert "could not read the `workflow_status` checkpoint (HTTP 503" in prompt


def test_degraded_mode_never_reads_memory_or_claims_a_recall(
    repo: Path, stubs: Stubs, cli, memory_server
) -> None:
    make_plan(repo)
    memory_server.state.slots["workflow_status"] = "Phase: execution"
    codex_edits(stubs, {"src/app.py": "fixed\n"})

    r = cli("dispatch", "TASK-002", cwd=repo, env=DEGRADED)

    assert r.code == 0, r.stderr
    assert memory_server.state.requests == []
    prompt = codex_runs(stubs)[0]["argv"][-1]
    assert "Memory continuity is unavailable for this task (degraded mode)" in prompt
    assert "Make no AgentMemory calls" in prompt
    assert "Phase: execution" not in prompt
    assert "recall this project's history" not in prompt


def test_an_unknown_memory_mode_is_a_usage_error(repo: Path, stubs: Stubs, cli) -> None:
    make_plan(repo)
    r = cli("dispatch", "TASK-002", cwd=repo, env={"PLAN_BUILD_MEMORY_MODE": "off"})
    assert r.code == 2
    assert "PLAN_BUILD_MEMORY_MODE is 'off'; it must be required or degraded" in r.stderr


def test_the_checkout_ships_both_codex_templates() -> None:
    assert (ROOT / "templates" / "codex" / "task.md.j2").is_file()
    assert (ROOT / "templates" / "codex" / "correction.md.j2").is_file()
    assert taskfile.FILENAME == "TASKS.md"
