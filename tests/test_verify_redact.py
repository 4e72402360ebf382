"""`verify` never echoes a secret: not on the terminal, not in `--json`, not in verify.json,
not in a command's log (issue 18.2). It withholds lines by the same rule dispatch uses."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from plan_build.core import gitrepo
from plan_build.delivery import baseline
from tests.support.gitcmd import git
from tests.support.tokens import aws_key, github_token

PY = sys.executable
WITHHELD = "[line withheld by plan-build: looks like a credential"


def configure(repo: Path, commands: list[dict[str, object]]) -> None:
    import yaml

    (repo / ".plan-build.yaml").write_text(yaml.safe_dump({"verify": {"commands": commands}}))


@pytest.fixture
def creds(repo: Path) -> Path:
    """A committed file holding a token (the user's own), and a session that changes code."""
    (repo / "creds.py").write_text(f'before = 1\nTOKEN = "{github_token()}"\nafter = 2\n')
    configure(repo, [{"name": "t", "argv": ["sh", "-c", "cat creds.py; exit 1"]}])
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "creds")
    baseline.capture(gitrepo.discover(repo), session_id="s")
    (repo / "app.py").write_text("x = 1\n")
    return repo


def everything_written(repo: Path) -> dict[str, str]:
    state = repo / ".git" / "plan-build" / "sessions" / "s"
    return {
        str(p.relative_to(state)): p.read_text(errors="replace")
        for p in state.rglob("*")
        if p.is_file()
    }


def test_a_failing_command_that_prints_a_secret_is_redacted_everywhere(creds: Path, cli) -> None:
    r = cli("verify", "--json", cwd=creds, env={"PLAN_BUILD_SESSION": "s"})

    assert r.code == 6, r.stderr
    assert github_token() not in r.stdout
    assert github_token() not in r.stderr
    files = everything_written(creds)
    assert set(files) >= {"verify.json", "logs/t.log"}
    for name, text in files.items():
        assert github_token() not in text, name
    log = files["logs/t.log"]
    assert "before = 1" in log  # only the credential's line is withheld
    assert "after = 2" in log
    assert f"{WITHHELD} (GitHub Token)]" in log
    row = next(c for c in json.loads(r.stdout)["checks"] if c["id"] == "command.t")
    assert row["status"] == "fail"
    assert "exited 1" in row["detail"]
    assert "after = 2" in row["detail"]


def test_a_secret_environment_value_printed_by_a_command_is_withheld_by_name(
    repo: Path, cli
) -> None:
    value = "s3cr3t-value-for-tests-42"
    configure(repo, [{"name": "t", "argv": ["sh", "-c", 'echo "auth with $SHOP_API_TOKEN"']}])
    baseline.capture(gitrepo.discover(repo), session_id="s")

    r = cli("verify", "--json", cwd=repo, env={"PLAN_BUILD_SESSION": "s", "SHOP_API_TOKEN": value})

    assert value not in r.stdout + r.stderr
    log = everything_written(repo)["logs/t.log"]
    assert value not in log
    assert "($SHOP_API_TOKEN)" in log


def test_a_secret_in_a_command_line_is_withheld_from_progress_detail_and_log(
    repo: Path, cli
) -> None:
    configure(repo, [{"name": "t", "argv": ["sh", "-c", f": {aws_key()}; exit 3"]}])
    baseline.capture(gitrepo.discover(repo), session_id="s")

    r = cli("verify", "--json", cwd=repo, env={"PLAN_BUILD_SESSION": "s"})

    assert r.code == 6
    assert aws_key() not in r.stdout + r.stderr
    for name, text in everything_written(repo).items():
        assert aws_key() not in text, name


def test_an_allowlist_pragma_does_not_stop_redaction(repo: Path, cli) -> None:
    (repo / "creds.py").write_text(f'TOKEN = "{github_token()}"  # pragma: allowlist secret\n')
    configure(repo, [{"name": "t", "argv": ["sh", "-c", "cat creds.py; exit 1"]}])
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "creds")
    baseline.capture(gitrepo.discover(repo), session_id="s")

    r = cli("verify", "--json", cwd=repo, env={"PLAN_BUILD_SESSION": "s"})

    assert github_token() not in r.stdout + r.stderr
    for name, text in everything_written(repo).items():
        assert github_token() not in text, name
