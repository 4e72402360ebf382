"""`plan-build env`: only facts it checked; unknown things say so."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.stubs import Stubs


def test_env_json_reports_checked_facts(cli, ready: Path, stubs: Stubs, bundle: Path) -> None:
    stubs.remove("auggie")
    stubs.rule("coderabbit", {"match": ["--version"], "stdout": "", "exit": 1})
    r = cli("env", "--json", cwd=ready)
    assert r.code == 0, r.stderr
    data = json.loads(r.stdout)
    assert {
        "version",
        "repo",
        "identity",
        "memory_mode",
        "release",
        "paths",
        "tools",
        "config",
        "recipe",
    } <= set(data)
    assert data["repo"] == str(ready)
    assert data["identity"] == {
        "value": "github.com/ana/shop",
        "source": str(ready / ".agentmemory-project"),
        "committed": True,
    }
    assert data["memory_mode"] is None  # decided by preflight at launch, not known here
    assert data["paths"]["skills"]["standard"] == str(bundle / "SKILL.md")
    assert data["tools"]["claude"]["version"] == "2.1.332"
    assert data["tools"]["codex"]["version"] == "0.171.0"
    assert data["tools"]["auggie"] is None
    assert data["tools"]["coderabbit"]["version"] is None  # found, but --version failed
    assert data["config"] is None


def test_env_outside_a_repository_is_still_truthful(cli, tmp_path: Path, stubs: Stubs) -> None:
    r = cli("env", "--json", cwd=tmp_path)
    assert r.code == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["repo"] is None
    assert data["identity"]["value"] is None
    r = cli("env", cwd=tmp_path)
    assert "not in a git work tree" in r.stderr
