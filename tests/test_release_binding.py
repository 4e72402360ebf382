"""Binding: a run resolves `current` once and keeps that release; children inherit it."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from plan_build.core import runrelease
from plan_build.core.context import Session
from plan_build.core.resources import locate
from plan_build.core.ui import Console
from plan_build.release import actions, binding, fetch
from plan_build.release.store import Store
from tests.support.releases import fake_bundle


@pytest.fixture
def root(private_home: Path) -> Path:
    return private_home / ".local" / "share" / "plan-build"


@pytest.fixture
def store(root: Path) -> Store:
    return Store(root, Console(stream=io.StringIO()))


def activate(store: Store, path: Path) -> str:
    return actions.activate(store, fetch.Source("dir", str(path), path=path), None).id


def test_plan_build_release_through_current_binds_the_real_release_path(
    tmp_path: Path, store: Store, root: Path
) -> None:
    fake_bundle(tmp_path / "a", "A")
    a = activate(store, tmp_path / "a")
    res = locate({"PLAN_BUILD_RELEASE": str(root / "current")})
    assert res.origin == "release"
    assert res.release_path == root / "releases" / a
    assert res.release_id == a
    assert res.skill("architect") == root / "releases" / a / "ARCHITECT.md"
    fake_bundle(tmp_path / "b", "B")
    activate(store, tmp_path / "b")
    assert "(A)" in res.skill("standard").read_text()  # still the release it started with


def test_a_session_hands_its_release_to_children_and_leases_it(
    tmp_path: Path, store: Store, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_bundle(tmp_path / "a", "A")
    a = activate(store, tmp_path / "a")
    monkeypatch.setenv("PLAN_BUILD_RELEASE", str(root / "current"))
    session = Session.from_process()
    try:
        real = str(root / "releases" / a)
        assert session.env["PLAN_BUILD_RELEASE"] == real
        assert os.environ["PLAN_BUILD_RELEASE"] == real  # for children started without env=
        assert binding.leases(root) == {a: [os.getpid()]}
        assert runrelease.hold(root / "releases" / a) is runrelease.hold(root / "current")  # once
    finally:
        for lease in list(runrelease._held.values()):
            lease.release_now()
        runrelease._held.clear()
    assert binding.leases(root) == {}


def test_a_bundle_outside_a_root_is_used_but_not_leased(tmp_path: Path) -> None:
    digest = fake_bundle(tmp_path / "bundle")
    res = locate({"PLAN_BUILD_RELEASE": str(tmp_path / "bundle")})
    assert res.release_id == digest[:16]
    assert runrelease.hold(tmp_path / "bundle") is None


def test_the_real_zipapp_binds_to_its_own_release_even_through_current(
    real_bundle, store: Store, root: Path
) -> None:
    release_id = activate(store, real_bundle.directory)
    run = subprocess.run(
        [sys.executable, str(root / "current" / "plan-build.pyz"), "release", "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    this_run = json.loads(run.stdout)["this_run"]
    assert this_run == {
        "origin": "release",
        "id": release_id,
        "path": str(root / "releases" / release_id),
    }
    assert json.loads(run.stdout)["current"]["bound"] != []  # its own lease, while it ran
    assert binding.leases(root) == {}  # and gone once it exited
    assert list((root / "leases").iterdir()) == []
