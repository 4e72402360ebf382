"""release.list, release.rollback, release.gc and the release status."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from plan_build.core.errors import PlanBuildError
from plan_build.core.ui import Console
from plan_build.release import actions, fetch
from plan_build.release.store import Store
from tests.support.releases import fake_bundle


@pytest.fixture
def root(private_home: Path) -> Path:
    return private_home / ".local" / "share" / "plan-build"


@pytest.fixture
def store(root: Path) -> Store:
    return Store(root, Console(stream=io.StringIO()))


def activate_new(store: Store, tmp: Path, marker: str) -> str:
    fake_bundle(tmp / marker, marker)
    src = fetch.Source("dir", marker, path=tmp / marker)
    return actions.activate(store, src, None).id


def current_id(root: Path) -> str:
    return Path(os.readlink(root / "current")).name


@pytest.fixture
def bound_run(root: Path) -> Iterator[callable]:  # type: ignore[valid-type]
    """Start a process bound to a release (as a running plan-build would be); stop on exit."""
    children: list[subprocess.Popen[str]] = []

    def start(release_id: str) -> subprocess.Popen[str]:
        code = (
            "import sys\n"
            "from pathlib import Path\n"
            "from plan_build.core.runrelease import hold\n"
            f"assert hold(Path({str(root / 'releases' / release_id)!r}))\n"
            "print('bound', flush=True)\n"
            "sys.stdin.read()\n"
        )
        child = subprocess.Popen(
            [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert child.stdout is not None
        assert child.stdout.readline() == "bound\n"
        children.append(child)
        return child

    yield start
    for child in children:
        if child.poll() is None:
            child.kill()
        child.communicate()  # also closes the pipes


# ------------------------------------------------------------------------------------ list


def test_list_shows_id_version_date_size_current_and_bound(
    cli, tmp_path: Path, store: Store, bound_run
) -> None:
    a = activate_new(store, tmp_path, "A")
    b = activate_new(store, tmp_path, "B")
    child = bound_run(a)
    r = cli("release.list", cwd=tmp_path)
    assert r.code == 0, r.stderr
    lines = r.stderr.splitlines()
    assert lines[0].split() == ["ID", "VERSION", "INSTALLED", "SIZE"]
    assert lines[1].startswith(f"* {b}  9.0.0")
    assert lines[1].endswith("current")
    assert lines[2].startswith(f"  {a}  9.0.0")
    assert lines[2].endswith(f"bound: pid {child.pid}")
    data = json.loads(cli("release.list", "--json", cwd=tmp_path).stdout)
    assert [(d["id"], d["current"], d["bound"]) for d in data] == [
        (b, True, []),
        (a, False, [child.pid]),
    ]
    assert all(d["size"] > 0 and d["installed"] and d["version"] == "9.0.0" for d in data)


def test_list_with_no_releases_says_how_to_make_one(cli, tmp_path: Path) -> None:
    r = cli("release.list", cwd=tmp_path)
    assert (r.code, r.stderr) == (
        0,
        "no releases yet · build one: plan-build release.build --activate\n",
    )


def test_status_names_the_root_the_current_release_and_this_runs_binding(
    cli, tmp_path: Path, store: Store, root: Path
) -> None:
    r = cli("release", cwd=tmp_path)
    assert "current      none · activate one: plan-build release.activate SOURCE" in r.stderr
    a = activate_new(store, tmp_path, "A")
    r = cli("release", "--json", cwd=tmp_path)
    data = json.loads(r.stdout)
    assert data["root"] == str(root)
    assert data["current"]["id"] == a
    assert data["this_run"] == {"origin": "checkout", "id": None, "path": None}
    human = cli("release", cwd=tmp_path).stderr
    assert human.splitlines()[0] == "releases root  ~/.local/share/plan-build"
    assert f"  current      {a} · plan-build 9.0.0 · activated " in human
    assert "  this run     checkout (not a release)" in human


# -------------------------------------------------------------------------------- rollback


def test_rollback_returns_to_the_previous_release_and_back(
    cli, tmp_path: Path, store: Store, root: Path
) -> None:
    a = activate_new(store, tmp_path, "A")
    b = activate_new(store, tmp_path, "B")
    r = cli("release.rollback", cwd=tmp_path)
    assert (r.code, r.stderr) == (0, f"rolled back to {a} · was {b}\n")
    assert current_id(root) == a
    r = cli("release.rollback", cwd=tmp_path)
    assert r.stderr == f"rolled back to {b} · was {a}\n"


def test_rollback_to_a_named_release_by_unique_prefix(
    tmp_path: Path, store: Store, root: Path
) -> None:
    a = activate_new(store, tmp_path, "A")
    activate_new(store, tmp_path, "B")
    activate_new(store, tmp_path, "C")
    assert actions.rollback(store, a[:6]).id == a
    assert current_id(root) == a
    log = [json.loads(line) for line in (root / "activations.log").read_text().splitlines()]
    assert [e["action"] for e in log] == ["activate", "activate", "activate", "rollback"]


def test_rollback_with_nothing_earlier_or_an_unknown_id(cli, tmp_path: Path, store: Store) -> None:
    activate_new(store, tmp_path, "A")
    r = cli("release.rollback", cwd=tmp_path)
    assert r.code == 6
    assert "there is no earlier release to roll back to" in r.stderr
    r = cli("release.rollback", "--to", "ffffffff", cwd=tmp_path)
    assert r.code == 6
    assert "no release ffffffff in " in r.stderr


def test_rollback_refuses_a_tampered_release_and_keeps_the_current_one(
    tmp_path: Path, store: Store, root: Path
) -> None:
    a = activate_new(store, tmp_path, "A")
    b = activate_new(store, tmp_path, "B")
    skill = root / "releases" / a / "SKILL.md"
    skill.chmod(0o644)
    skill.write_text("---\nname: plan-build\ndescription: changed behind our back\n---\n")
    with pytest.raises(PlanBuildError) as caught:
        actions.rollback(store, None)
    assert f"release {a} is damaged: SKILL.md does not match MANIFEST.sha256" in str(caught.value)
    assert current_id(root) == b


def test_activating_good_content_again_repairs_a_tampered_release(
    tmp_path: Path, store: Store, root: Path
) -> None:
    a = activate_new(store, tmp_path, "A")
    activate_new(store, tmp_path, "B")
    skill = root / "releases" / a / "SKILL.md"
    skill.chmod(0o644)
    skill.write_text("tampered\n")
    assert activate_new(store, tmp_path, "A") == a
    assert "repairing release" in store.console.stream.getvalue()  # type: ignore[attr-defined]
    store.verify(a)  # intact again
    assert current_id(root) == a


# -------------------------------------------------------------------------------------- gc


def test_gc_keeps_current_bound_and_recent_releases(
    cli, tmp_path: Path, store: Store, root: Path, bound_run
) -> None:
    a = activate_new(store, tmp_path, "A")
    b = activate_new(store, tmp_path, "B")
    c = activate_new(store, tmp_path, "C")
    d = activate_new(store, tmp_path, "D")
    child = bound_run(a)
    r = cli("release.gc", "--keep", "1", "--json", cwd=tmp_path)
    assert r.code == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["removed"] == [b]
    assert data["kept"] == {d: "current", c: "recent", a: f"bound by pid {child.pid}"}
    assert "removed 1 release(s), freed " in r.stderr
    assert sorted(p.name for p in (root / "releases").iterdir()) == sorted([a, c, d])

    child.communicate()  # closes its stdin: the bound run ends
    r = cli("release.gc", "--keep", "0", cwd=tmp_path)
    assert sorted(p.name for p in (root / "releases").iterdir()) == [d]
    assert list((root / "leases").iterdir()) == []  # its stale lease went too


def test_gc_never_removes_a_release_bound_by_a_killed_then_restarted_run(
    tmp_path: Path, store: Store, root: Path, bound_run
) -> None:
    a = activate_new(store, tmp_path, "A")
    activate_new(store, tmp_path, "B")
    child = bound_run(a)
    child.kill()  # SIGKILL: no cleanup ran, the lease file stays but its lock is gone
    child.communicate()
    assert len(list((root / "leases").iterdir())) == 1
    result = actions.gc(store, keep=0)
    assert result.removed == [a]


def test_gc_with_a_negative_keep_is_a_usage_error(cli, tmp_path: Path) -> None:
    r = cli("release.gc", "--keep", "-1", cwd=tmp_path)
    assert r.code == 2


def test_gc_keep_that_is_not_a_number_is_a_usage_error_with_a_fix(cli, tmp_path: Path) -> None:
    r = cli("release.gc", "--keep", "many", cwd=tmp_path)
    assert (r.code, r.stderr) == (
        2,
        "plan-build: --keep must be a whole number (got 'many')\n"
        "  fix: give a number, e.g. --keep 3\n",
    )


def test_gc_negative_keep_says_what_to_give_instead(cli, tmp_path: Path) -> None:
    r = cli("release.gc", "--keep", "-1", cwd=tmp_path)
    assert (r.code, r.stderr) == (
        2,
        "plan-build: --keep must be 0 or more (got -1)\n"
        "  fix: give a number of releases to keep, e.g. --keep 3; --keep 0 keeps only the "
        "current one and those running plan-builds are bound to\n",
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["release"],
        ["release.list"],
        ["release.activate", "b"],
        ["release.rollback"],
        ["release.gc"],
        ["release.install"],
    ],
    ids=lambda argv: argv[0],
)
def test_a_releases_root_that_is_a_regular_file_is_refused_with_a_fix(
    cli, tmp_path: Path, argv: list[str]
) -> None:
    fake_bundle(tmp_path / "b")
    home = tmp_path / "not-a-dir"
    home.write_text("keep me\n")
    r = cli(*argv, cwd=tmp_path, env={"PLAN_BUILD_HOME": str(home)})
    assert (r.code, r.stderr) == (
        3,
        f"plan-build: the releases root {home} is a file, not a directory\n"
        f"  fix: set PLAN_BUILD_HOME to a directory (or unset it), or move {home} away\n",
    )
    assert home.read_text() == "keep me\n"
