"""Credentials never travel into a prompt or into TASKS.md evidence."""

from __future__ import annotations

from plan_build import redact


def test_known_secret_patterns_are_withheld_line_by_line() -> None:
    text = "ok\nkey=AKIAIOSFODNN7EXAMPLE\n-----BEGIN RSA PRIVATE KEY-----\nfine\n"
    out, found = redact.redact(text, {})
    assert out.splitlines() == [
        "ok",
        "[line withheld by plan-build: looks like a credential (AWS Access Key)]",
        "[line withheld by plan-build: looks like a credential (Private Key)]",
        "fine",
    ]
    assert [f.line for f in found] == [2, 3]


def test_values_of_secret_environment_variables_are_withheld_by_name() -> None:
    out, found = redact.redact(
        "Authorization failed for s3cr3t-value-42\n", {"SHOP_API_TOKEN": "s3cr3t-value-42"}
    )
    assert "s3cr3t-value-42" not in out
    assert "($SHOP_API_TOKEN)" in out
    assert found[0].kind == "$SHOP_API_TOKEN"


def test_hashes_paths_and_short_values_are_not_secrets() -> None:
    text = (
        "tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n"
        "fingerprint sha256:f10e0aca2f6630ae5e57e02ceadbad29b6d59bfec88ce1939fbc828f75afc1b8\n"
        "normal text with a /home/ana/.ssh/known_hosts path\n"
        "server at 203.0.113.7\n"
    )
    env = {"SSH_AUTH_SOCK": "/home/ana/.ssh/known_hosts", "GH_TOKEN": "short"}
    assert redact.redact(text, env) == (text, [])
