"""The secret scan cannot be switched off by the change it scans (issues 17 and 18.3).

Each test plants an obviously fake token the way a session could and checks what `verify`
reports: git attributes, a file that looks binary, an uncommitted `.secrets.baseline`, an
allowlist pragma, a lock file or another name detect-secrets skips for noise.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from plan_build.core import config, gitrepo
from plan_build.delivery import baseline, secretscan
from plan_build.delivery import verify as verify_mod
from plan_build.delivery.intended import parse_added
from tests.support.gitcmd import git
from tests.support.tokens import aws_key, github_token


def start(repo: Path) -> None:
    baseline.capture(gitrepo.discover(repo), session_id="s")


def run(repo: Path) -> verify_mod.Report:
    r = gitrepo.discover(repo)
    return verify_mod.run(r, baseline.load(r, "s"), config=config.load(repo), env=dict(os.environ))


def by_id(report: verify_mod.Report) -> dict[str, Any]:
    return {c.id: c for c in report.checks}


def sha1(secret: str) -> str:
    return hashlib.sha1(secret.encode()).hexdigest()  # noqa: S324  (detect-secrets' own hash)


# --- attributes and binary content -------------------------------------------------------


@pytest.mark.parametrize(
    "attributes",
    ["*.cfg binary\n", "*.cfg -diff\n", "*.cfg diff=hide\n"],
    ids=["binary", "-diff", "textconv-driver"],
)
def test_attributes_written_by_the_session_do_not_hide_a_secret(
    repo: Path, attributes: str
) -> None:
    git(repo, "config", "diff.hide.textconv", "sed d")  # a driver that shows nothing
    git(repo, "config", "diff.hide.binary", "true")
    start(repo)
    (repo / ".gitattributes").write_text(attributes)
    (repo / "deploy.cfg").write_text(f"[aws]\nkey = {aws_key()}\n")

    report = run(repo)

    scan = by_id(report)["secrets.scan"]
    assert scan.status == "fail", scan.detail
    assert "deploy.cfg:2 (AWS Access Key)" in scan.detail
    assert not report.ok


def test_a_pre_existing_diff_attribute_does_not_hide_a_secret(repo: Path) -> None:
    (repo / ".gitattributes").write_text("*.cfg -diff\n")
    (repo / "deploy.cfg").write_text("[aws]\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "cfg is not diffed")
    start(repo)
    (repo / "deploy.cfg").write_text(f"[aws]\ntoken = {github_token()}\n")

    scan = by_id(run(repo))["secrets.scan"]

    assert scan.status == "fail", scan.detail
    assert "deploy.cfg:2 (GitHub Token)" in scan.detail


def test_big_file_threshold_does_not_turn_a_file_binary_for_the_scan(repo: Path) -> None:
    git(repo, "config", "core.bigFileThreshold", "16")
    start(repo)
    (repo / "settings.py").write_text(f'AWS = "{aws_key()}"\n' + "x = 1\n" * 20)

    scan = by_id(run(repo))["secrets.scan"]

    assert scan.status == "fail", scan.detail
    assert "settings.py:1 (AWS Access Key)" in scan.detail


def test_a_secret_inside_a_binary_file_is_found(repo: Path) -> None:
    start(repo)
    blob = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + github_token().encode() + b"\x00\xff\xfe\n"
    (repo / "logo.png").write_bytes(blob)

    scan = by_id(run(repo))["secrets.scan"]

    assert scan.status == "fail", scan.detail
    assert "logo.png:" in scan.detail
    assert "(GitHub Token)" in scan.detail


def test_binary_noise_is_not_reported(repo: Path) -> None:
    start(repo)
    noise = bytes(range(256)) * 40 + hashlib.sha512(b"x").digest() * 8
    (repo / "data.bin").write_bytes(noise)

    scan = by_id(run(repo))["secrets.scan"]

    assert scan.status == "pass", scan.detail


# --- .secrets.baseline -------------------------------------------------------------------


def baseline_file(path: str, secret: str) -> str:
    return json.dumps(
        {"results": {path: [{"hashed_secret": sha1(secret), "type": "AWS Access Key"}]}}
    )


def test_an_uncommitted_secrets_baseline_written_by_the_session_accepts_nothing(
    repo: Path,
) -> None:
    start(repo)
    (repo / "b.py").write_text(f'k = "{aws_key()}"\n')
    (repo / ".secrets.baseline").write_text(baseline_file("b.py", aws_key()))

    scan = by_id(run(repo))["secrets.scan"]

    assert scan.status == "fail", scan.detail
    assert "b.py:1 (AWS Access Key)" in scan.detail


def test_an_uncommitted_secrets_baseline_from_before_the_session_accepts_nothing(
    repo: Path,
) -> None:
    (repo / ".secrets.baseline").write_text(baseline_file("b.py", aws_key()))
    start(repo)  # the baseline file is pre-existing work, not committed
    (repo / "b.py").write_text(f'k = "{aws_key()}"\n')

    assert by_id(run(repo))["secrets.scan"].status == "fail"


def test_a_secrets_baseline_committed_before_the_session_accepts_its_secret(repo: Path) -> None:
    (repo / ".secrets.baseline").write_text(baseline_file("b.py", aws_key()))
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "accepted test fixture key")
    start(repo)
    (repo / "b.py").write_text(f'k = "{aws_key()}"\n')
    (repo / "c.py").write_text(f'k = "{aws_key()}"\n')  # accepted for b.py only

    scan = by_id(run(repo))["secrets.scan"]

    assert scan.status == "fail"
    assert "c.py:1" in scan.detail
    assert "b.py" not in scan.detail


def test_a_session_cannot_hide_a_token_inside_the_secrets_baseline_itself(repo: Path) -> None:
    start(repo)
    (repo / ".secrets.baseline").write_text(
        json.dumps({"results": {}, "note": github_token()}, indent=1)
    )

    scan = by_id(run(repo))["secrets.scan"]

    assert scan.status == "fail", scan.detail
    assert ".secrets.baseline:" in scan.detail


# --- allowlist pragmas -------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        'k = "{key}"  # pragma: allowlist secret\n',
        '# pragma: allowlist nextline secret\nk = "{key}"\n',
    ],
    ids=["same-line", "nextline"],
)
def test_an_allowlist_pragma_added_by_the_session_is_a_blocking_finding(
    repo: Path, text: str
) -> None:
    start(repo)
    (repo / "a.py").write_text(text.format(key=aws_key()))

    report = run(repo)
    rows = by_id(report)

    assert not report.ok
    assert rows["secrets.scan"].status == "pass"  # nothing outside the allowlist
    allow = rows["secrets.allowlisted"]
    assert allow.status == "fail"
    line = text.count("\n")
    assert f"a.py:{line} (AWS Access Key)" in allow.detail
    assert "plan-build commit" in (allow.remediation or "")
    assert [f.as_json() for f in report.allowlisted] == [
        {"path": "a.py", "line": line, "type": "AWS Access Key"}
    ]
    saved = json.loads((repo / ".git/plan-build/sessions/s/verify.json").read_text())
    assert saved["allowlisted"] == [{"path": "a.py", "line": line, "type": "AWS Access Key"}]


def test_a_pre_existing_nextline_pragma_still_counts_as_allowlisting_an_added_line(
    repo: Path,
) -> None:
    (repo / "a.py").write_text("# pragma: allowlist nextline secret\nk = 1\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "a")
    start(repo)
    (repo / "a.py").write_text(f'# pragma: allowlist nextline secret\nk = "{aws_key()}"\n')

    rows = by_id(run(repo))

    assert rows["secrets.scan"].status == "pass"
    assert "a.py:2 (AWS Access Key)" in rows["secrets.allowlisted"].detail


def test_a_pragma_on_a_line_without_a_secret_changes_nothing(repo: Path) -> None:
    start(repo)
    (repo / "a.py").write_text("x = 1  # pragma: allowlist secret\n")

    report = run(repo)

    assert report.ok, [c for c in report.checks if c.failed]
    assert "secrets.allowlisted" not in by_id(report)


# --- names detect-secrets skips for noise (issue 18.3) -----------------------------------


@pytest.mark.parametrize(
    "name", ["package-lock.json", "yarn.lock", "poetry.lock", "api/swagger.json", "theme.css"]
)
def test_tokens_in_files_skipped_by_name_are_found(repo: Path, name: str) -> None:
    start(repo)
    path = repo / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'{{\n  "resolved": "https://npm.example/x.tgz?token={github_token()}"\n}}\n')

    scan = by_id(run(repo))["secrets.scan"]

    assert scan.status == "fail", scan.detail
    assert f"{name}:2 (GitHub Token)" in scan.detail


def test_lock_file_integrity_hashes_are_not_findings(repo: Path) -> None:
    start(repo)
    digest = hashlib.sha512(b"left-pad").digest().hex()
    (repo / "package-lock.json").write_text(
        "{\n"
        f'  "integrity": "sha512-{digest}",\n'
        f'  "shasum": "{hashlib.sha1(b"left-pad").hexdigest()}",\n'  # noqa: S324
        '  "password": "not-really-a-password-field-value"\n'
        "}\n"
    )

    scan = by_id(run(repo))["secrets.scan"]

    assert scan.status == "pass", scan.detail


# --- the scanner itself --------------------------------------------------------------------


def test_only_added_lines_are_scanned_and_numbered_in_the_new_file() -> None:
    diff = (
        "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n"
        f'@@ -3,0 +4 @@\n+k = "{aws_key()}"\n'
        f'@@ -9 +10 @@\n-old = "{github_token()}"\n+new = 1\n'
    ).encode()

    found = secretscan.scan(parse_added(diff))

    assert [(f.path, f.line, f.type, f.allowlisted) for f in found] == [
        ("x.py", 4, "AWS Access Key", False)
    ]


def test_the_canary_is_caught() -> None:
    assert secretscan.canary_caught()
