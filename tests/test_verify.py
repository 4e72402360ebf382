"""`verify`: the final checks on the intended change, as the user reads them."""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path
from typing import Any

import pytest

from plan_build.core import config, gitrepo, snapshot
from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.delivery import baseline, secretscan, statusindex
from plan_build.delivery import verify as verify_mod
from tests.support.gitcmd import add_submodule, git

PY = sys.executable


@pytest.fixture
def session(repo: Path) -> Path:
    (repo / "app.py").write_text("def f():\n    return 1\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "app")
    baseline.capture(gitrepo.discover(repo), session_id="s")
    return repo


def configure(repo: Path, commands: list[dict[str, Any]]) -> None:
    import yaml

    (repo / ".plan-build.yaml").write_text(yaml.safe_dump({"verify": {"commands": commands}}))


def run(repo: Path, mode: str | None = None) -> verify_mod.Report:
    r = gitrepo.discover(repo)
    return verify_mod.run(
        r,
        baseline.load(r, "s"),
        config=config.load(repo),
        env=dict(os.environ),
        mode_flag=mode,
    )


def by_id(report: verify_mod.Report) -> dict[str, Any]:
    return {c.id: c for c in report.checks}


def test_clean_change_passes_and_json_has_the_documented_shape(session: Path, cli) -> None:
    configure(session, [{"name": "tests", "argv": [PY, "-c", "print('ok')"], "timeout": 60}])
    (session / "app.py").write_text("def f():\n    return 2\n")

    r = cli("verify", "--json", cwd=session)

    assert r.code == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["ok"] is True
    assert data["session"] == "s"
    assert set(data["change"]) >= {"baseline_tree", "tree", "files"}
    assert data["change"]["files"] == 2  # app.py and the new .plan-build.yaml
    ids = [c["id"] for c in data["checks"]]
    assert ids[:2] == ["change", "diff.check"]
    assert {"secrets.scan", "command.tests", "change.stable"} <= set(ids)
    row = next(c for c in data["checks"] if c["id"] == "command.tests")
    assert set(row) == {"id", "status", "degradable", "detail", "remediation", "seconds"}
    assert row["status"] == "pass"
    assert "verified · next: plan-build commit" in r.stderr
    saved = json.loads((session / ".git/plan-build/sessions/s/verify.json").read_text())
    assert saved["ok"] is True
    assert saved["change"]["tree"] == data["change"]["tree"]


def test_failing_command_blocks_with_exit_6_and_keeps_its_output(session: Path, cli) -> None:
    configure(
        session,
        [{"name": "tests", "argv": [PY, "-c", "import sys; print('3 failed'); sys.exit(1)"]}],
    )
    r = cli("verify", cwd=session)
    assert r.code == ExitCode.BLOCKED
    assert "exited 1: 3 failed" in r.stderr
    assert "plan-build: verification failed: command.tests" in r.stderr
    log = session / ".git/plan-build/sessions/s/logs/tests.log"
    assert "3 failed" in log.read_text()
    assert str(log) in r.stderr


def test_missing_tool_is_not_available_never_passed(session: Path) -> None:
    configure(session, [{"name": "lint", "argv": ["no-such-linter-xyz", "."]}])
    check = by_id(run(session))["command.lint"]
    assert check.status == "fail"
    assert check.detail.startswith("not available: no-such-linter-xyz")


def test_command_timeout_is_a_failure(session: Path) -> None:
    configure(
        session,
        [{"name": "slow", "argv": [PY, "-c", "import time; time.sleep(30)"], "timeout": 0.5}],
    )
    check = by_id(run(session))["command.slow"]
    assert check.status == "fail"
    assert "did not finish within 0.5s" in check.detail


def test_a_command_that_rewrites_files_fails_stability(session: Path) -> None:
    configure(
        session,
        [{"name": "fmt", "argv": [PY, "-c", "open('app.py','a').write('# formatted\\n')"]}],
    )
    report = run(session)
    assert by_id(report)["command.fmt"].status == "pass"
    stable = by_id(report)["change.stable"]
    assert stable.status == "fail"
    assert "app.py" in stable.detail
    assert not report.ok


@pytest.mark.parametrize(
    ("script", "moved"),
    [
        # same size, same second, a file the session never touched: only its content differs
        ("open('README.md','w').write('# shoq\\n')", "README.md"),
        ("open('fresh.txt','w').write('x')", "fresh.txt"),
        ("import os; os.remove('README.md')", "README.md"),
        # (a check cannot change the index or .git/info/exclude: tests/test_check_sandbox.py)
    ],
)
@pytest.mark.parametrize("after_status", [False, True], ids=["fresh", "after-status"])
def test_stability_sees_any_change_while_verifying(
    session: Path, script: str, moved: str, after_status: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second snapshot reuses the first one's private index (issue 15): it must still see
    every change a check makes, even one that keeps the file's size within the same second.
    After a `status`, verify's first snapshot starts from the index `status` kept (issue 36):
    the same holds."""
    (session / ".gitignore").write_text("*.log\n")
    (session / "build.log").write_text("tracked although ignored\n")
    git(session, "add", "-f", "build.log", ".gitignore")
    git(session, "commit", "-qm", "log")
    r = gitrepo.discover(session)
    baseline.capture(r, session_id="s2")
    (session / "notes.txt").write_text("the session's untracked note\n")
    configure(session, [{"name": "fmt", "argv": [PY, "-c", script]}])
    adopted: list[Path] = []
    real_adopt = snapshot.Rescan.adopt
    monkeypatch.setattr(
        snapshot.Rescan,
        "adopt",
        lambda self, index: (adopted.append(index), real_adopt(self, index)),
    )
    if after_status:
        kept = statusindex.tree(r, baseline.load(r, "s2"))
        assert kept == snapshot.worktree_tree(r)
    report = verify_mod.run(
        r, baseline.load(r, "s2"), config=config.load(session), env=dict(os.environ)
    )
    if after_status:
        assert report.change.tree == kept  # the kept index's tree: what a fresh one gives
    assert len(adopted) == 1  # (a fresh verify seeds the kept index itself, then adopts it)
    assert by_id(report)["command.fmt"].status == "pass"
    stable = by_id(report)["change.stable"]
    assert stable.status == "fail", stable.detail
    assert moved in stable.detail


def test_stability_passes_when_nothing_moved(session: Path) -> None:
    (session / "app.py").write_text("def f():\n    return 2\n")
    (session / "notes.md").write_text("new\n")
    configure(session, [{"name": "noop", "argv": [PY, "-c", "pass"]}])
    stable = by_id(run(session))["change.stable"]
    assert stable.status == "pass", stable.detail


def test_without_configured_commands_it_warns(session: Path) -> None:
    (session / "app.py").write_text("x = 1\n")
    report = run(session)
    assert report.ok
    assert by_id(report)["commands"].status == "warn"


def test_whitespace_errors_in_added_lines(session: Path) -> None:
    (session / "app.py").write_text("def f():   \n    return 1\n")
    check = by_id(run(session))["diff.check"]
    assert check.status == "fail"
    assert "app.py:1: trailing whitespace." in check.detail


def test_planted_secret_is_found_in_added_lines_only(session: Path) -> None:
    key = secretscan.canary_secret()
    (session / "settings.py").write_text(f'aws = "{key}"\n')
    check = by_id(run(session))["secrets.scan"]
    assert check.status == "fail"
    assert "settings.py:1 (AWS Access Key)" in check.detail


def test_secret_that_was_already_there_is_not_blamed(repo: Path) -> None:
    key = secretscan.canary_secret()
    (repo / "legacy.py").write_text(f'aws = "{key}"\n\n\n\nx = 1\n')
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "legacy")
    baseline.capture(gitrepo.discover(repo), session_id="s")
    (repo / "legacy.py").write_text(f'aws = "{key}"\n\n\n\nx = 2\n')
    check = by_id(run(repo))["secrets.scan"]
    assert check.status == "pass", check.detail
    assert "canary caught" in check.detail


def test_scan_never_opens_a_network_connection(
    session: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the secret scan tried to use the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    key = secretscan.canary_secret()
    (session / "s.py").write_text(f'slack = "xoxb-1234567890-abcdefghij"\naws = "{key}"\n')
    check = by_id(run(session))["secrets.scan"]
    assert check.status == "fail"
    assert "s.py:2 (AWS Access Key)" in check.detail


def test_missed_canary_means_no_clean_result(
    session: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(secretscan, "canary_caught", lambda: False)
    (session / "app.py").write_text("x = 1\n")
    check = by_id(run(session))["secrets.scan"]
    assert check.status == "fail"
    assert "missed its canary" in check.detail


def test_unavailable_scanner_is_reported_not_passed(
    session: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def gone(*args: Any, **kwargs: Any) -> Any:
        raise secretscan.ScannerUnavailable("detect-secrets cannot be imported (test)")

    monkeypatch.setattr(secretscan, "scan", gone)
    (session / "app.py").write_text("x = 1\n")
    check = by_id(run(session))["secrets.scan"]
    assert check.status == "warn"
    assert check.detail == "not available: detect-secrets cannot be imported (test)"


def test_todo_and_placeholders_in_records_block(session: Path) -> None:
    (session / "README.md").write_text(
        "# shop\n\nTODO: describe setup\n\n```yaml\nname: {{ .Values.name }}\n```\n"
        "Owner: [placeholder]\nSee the TBD section.\n"
    )
    (session / "app.py").write_text("# TODO in code is not a record\n")
    check = by_id(run(session))["records.placeholders"]
    assert check.status == "fail"
    assert "README.md:3: TODO" in check.detail
    assert "README.md:8: [placeholder" in check.detail
    assert "README.md:9: TBD" in check.detail
    assert ":6:" not in check.detail  # template text inside a code fence is an example


def test_template_text_outside_code_blocks_is_a_placeholder(session: Path) -> None:
    (session / "docs").mkdir()
    (session / "docs/HANDOVER.md").write_text("# Handover\nOwner: {{ owner }}\n")
    check = by_id(run(session))["records.placeholders"]
    assert check.status == "fail"
    assert "docs/HANDOVER.md:2: {{ owner }}" in check.detail


def write_records(repo: Path, skip: str = "", empty: str = "") -> None:
    (repo / "docs").mkdir(exist_ok=True)
    for name in verify_mod.DOCUMENTS:
        if name == skip:
            continue
        (repo / name).write_text("" if name == empty else f"# {name}\n\nContent.\n")


def test_architect_mode_requires_every_record_and_handover_document(session: Path) -> None:
    write_records(session, skip="docs/RUNBOOK.md", empty="ADR.md")
    report = run(session)
    assert report.mode == "architect"  # SPEC.md and TASKS.md are present
    check = by_id(report)["records.present"]
    assert check.status == "fail"
    assert "missing: docs/RUNBOOK.md" in check.detail
    assert "empty: ADR.md" in check.detail


def test_architect_mode_passes_with_all_documents(session: Path) -> None:
    write_records(session)
    check = by_id(run(session))["records.present"]
    assert check.status == "pass"
    assert by_id(run(session, mode="standard"))["records.present"].status == "skip"


def test_mode_recorded_at_launch_wins_over_detection(repo: Path) -> None:
    baseline.capture(gitrepo.discover(repo), session_id="s", mode="architect")
    report = run(repo)
    assert report.mode == "architect"
    assert by_id(report)["records.present"].status == "fail"


def test_bad_mode_flag(session: Path, cli) -> None:
    r = cli("verify", "--mode", "quick", cwd=session)
    assert r.code == ExitCode.USAGE
    assert "--mode must be standard or architect" in r.stderr


def test_markdown_links_to_repo_files_must_resolve(session: Path) -> None:
    (session / "docs").mkdir()
    (session / "docs/guide.md").write_text(
        "# Guide\n"
        "[app](../app.py) and [dir](../docs/) and [top](/README.md#intro)\n"
        "[site](https://example.com/x.md) [mail](mailto:a@b.c) [anchor](#guide)\n"
        "[gone](missing.md) ![img](img/logo.png 'Logo')\n"
        "`[not a link](nowhere.md)`\n"
        "```\n[in code](nowhere.md)\n```\n"
        "[ref]: ../nope/ref.md\n"
        "[escape](../../outside.md) [spaced](<my file.md>) [pct](my%20file.md)\n"
    )
    (session / "docs/my file.md").write_text("x\n")
    check = by_id(run(session))["docs.links"]
    assert check.status == "fail"
    detail = check.detail
    assert detail.startswith("4 broken link(s)")
    for broken in ("missing.md", "img/logo.png", "../nope/ref.md", "../../outside.md"):
        assert f"→ {broken}" in detail
    for fine in ("../app.py", "nowhere.md", "my file.md", "example.com"):
        assert f"→ {fine}" not in detail


def test_config_errors_name_the_line(session: Path, cli) -> None:
    (session / ".plan-build.yaml").write_text(
        "verify:\n  commands:\n    - name: tests\n      argv: [pytest]\n    - name: lint\n"
    )
    r = cli("verify", cwd=session)
    assert r.code == ExitCode.USAGE
    assert ".plan-build.yaml:5: verify.commands[1] (lint) needs an argv" in r.stderr
    (session / ".plan-build.yaml").write_text("verify:\n  comands: []\n")
    r = cli("verify", cwd=session)
    assert r.code == ExitCode.USAGE
    assert ".plan-build.yaml:2: unknown key verify.comands" in r.stderr
    (session / ".plan-build.yaml").write_text(
        "verify:\n  commands:\n    - name: t\n      argv: [x]\n      timeout: soon\n"
    )
    r = cli("verify", cwd=session)
    assert r.code == ExitCode.USAGE
    assert ":5: verify.commands[0].timeout must be a float" in r.stderr


def test_duplicate_command_names_are_refused(session: Path) -> None:
    configure(session, [{"name": "t", "argv": ["a"]}, {"name": "t", "argv": ["b"]}])
    with pytest.raises(PlanBuildError, match="the name 't' is used twice"):
        run(session)


def test_verify_refuses_mid_merge(session: Path) -> None:
    (session / ".git/MERGE_HEAD").write_text(git(session, "rev-parse", "HEAD"))
    with pytest.raises(PlanBuildError, match="cannot verify: a merge is in progress"):
        run(session)


def test_uncommitted_work_inside_a_submodule_is_a_warning(repo: Path, tmp_path: Path) -> None:
    add_submodule(repo, tmp_path / "lib")
    baseline.capture(gitrepo.discover(repo), session_id="s")
    (repo / "lib" / "lib.txt").write_text("v2\n")
    (repo / "app.py").write_text("x = 1\n")
    report = run(repo)
    check = by_id(report)["change.submodules"]
    assert check.status == "warn"
    assert "lib" in check.detail
    assert report.ok


def test_head_moved_is_flagged_before_commit_refuses(session: Path) -> None:
    (session / "x.txt").write_text("x\n")
    git(session, "add", "x.txt")
    git(session, "commit", "-qm", "moved")
    check = by_id(run(session))["change.head"]
    assert check.status == "warn"
    assert "plan-build commit will refuse" in check.detail
