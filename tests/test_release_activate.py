"""release.activate: all-or-nothing activation from a directory, archive or URL.

Bundles here are small fakes that pass the full validation (their zipapp prints its version)
so each activation takes milliseconds; test_release_bundle.py covers the real zipapp.
"""

from __future__ import annotations

import errno
import io
import json
import os
import stat
import tarfile
import zipfile
from pathlib import Path

import pytest

from plan_build.core.errors import PlanBuildError
from plan_build.core.ui import Console
from plan_build.release import actions, fetch
from plan_build.release.store import Store
from tests.support.releases import (
    FileServer,
    fake_bundle,
    fake_files,
    manifest_text,
    tar_bundle,
    tree_state,
    write_bundle,
)


@pytest.fixture
def root(private_home: Path) -> Path:
    """The default releases root: $XDG_DATA_HOME/plan-build inside the private HOME."""
    return private_home / ".local" / "share" / "plan-build"


@pytest.fixture
def store(root: Path) -> Store:
    return Store(root, Console(stream=io.StringIO()))


def activate(store: Store, source: Path | str, pin: str | None = None) -> actions.Activation:
    src = fetch.classify(str(source), Path.cwd(), pinned=pin is not None)
    return actions.activate(store, src, pin)


def current_id(root: Path) -> str:
    return Path(os.readlink(root / "current")).name


# ------------------------------------------------------------------------------ happy paths


def test_activating_a_bundle_directory_makes_it_current_and_read_only(
    cli, tmp_path: Path, root: Path
) -> None:
    digest = fake_bundle(tmp_path / "bundle")
    r = cli("release.activate", "bundle", cwd=tmp_path)
    assert r.code == 0, r.stderr
    assert r.stderr == f"activated {digest[:16]} (plan-build 9.0.0)\n"
    assert os.readlink(root / "current") == f"releases/{digest[:16]}"
    published = root / "releases" / digest[:16]
    assert (published / "SKILL.md").read_text() == (tmp_path / "bundle" / "SKILL.md").read_text()
    assert not stat.S_IMODE((published / "SKILL.md").stat().st_mode) & 0o222
    assert not stat.S_IMODE(published.stat().st_mode) & 0o222
    assert sorted(p.name for p in (root / "releases").iterdir()) == [digest[:16]]


def test_activating_identical_content_again_keeps_the_same_release(
    cli, tmp_path: Path, root: Path
) -> None:
    digest = fake_bundle(tmp_path / "one")
    fake_bundle(tmp_path / "two")  # same content elsewhere
    assert cli("release.activate", "one", cwd=tmp_path).code == 0
    r = cli("release.activate", "two", "--json", cwd=tmp_path)
    assert r.code == 0
    assert f"release {digest[:16]} (plan-build 9.0.0) is already active" in r.stderr
    data = json.loads(r.stdout)
    assert data["id"] == data["previous"] == digest[:16]
    assert data["installed"] is False
    assert sorted(p.name for p in (root / "releases").iterdir()) == [digest[:16]]


def test_a_new_release_replaces_the_old_and_says_what_was_active(
    cli, tmp_path: Path, root: Path
) -> None:
    a = fake_bundle(tmp_path / "a", "A")[:16]
    b = fake_bundle(tmp_path / "b", "B")[:16]
    cli("release.activate", "a", cwd=tmp_path)
    r = cli("release.activate", "b", cwd=tmp_path)
    assert r.stderr == f"activated {b} (plan-build 9.0.0) · was {a}\n"
    assert current_id(root) == b
    assert (root / "releases" / a / "SKILL.md").is_file()  # the old one stays for rollback


@pytest.mark.parametrize("top", ["plan-build-x", None])
def test_activating_an_archive(tmp_path: Path, store: Store, root: Path, top: str | None) -> None:
    digest = fake_bundle(tmp_path / "bundle")
    archive = tar_bundle(tmp_path / "bundle", tmp_path / "bundle.tar.gz", top=top)
    result = activate(store, archive)
    assert result.id == digest[:16]
    assert current_id(root) == digest[:16]


def test_activating_file_urls_of_an_archive_and_of_a_directory(
    tmp_path: Path, store: Store, root: Path
) -> None:
    a = fake_bundle(tmp_path / "a", "A")[:16]
    b = fake_bundle(tmp_path / "b", "B")[:16]
    archive = tar_bundle(tmp_path / "a", tmp_path / "a.tar.gz")
    assert activate(store, archive.as_uri()).id == a
    assert activate(store, (tmp_path / "b").as_uri()).id == b
    assert tree_state(root)["entries"] == sorted([a, b])  # the download left nothing behind


def test_activating_over_http_with_a_pinned_digest(tmp_path: Path, store: Store) -> None:
    digest = fake_bundle(tmp_path / "bundle")
    archive = tar_bundle(tmp_path / "bundle", tmp_path / "bundle.tar.gz")
    with FileServer() as server:
        server.files["rel.tar.gz"] = archive.read_bytes()
        result = activate(store, f"{server.url}/rel.tar.gz", pin=digest)
    assert result.digest == digest
    assert server.requests == ["/rel.tar.gz"]


def test_a_byte_flipped_download_is_rejected_and_the_previous_release_stays(
    tmp_path: Path, store: Store, root: Path
) -> None:
    old = activate(store, _bundle(tmp_path / "old", "OLD")).id
    digest = fake_bundle(tmp_path / "bundle")
    archive = bytearray(tar_bundle(tmp_path / "bundle", tmp_path / "b.tar", top=None).read_bytes())
    at = bytes(archive).index(b"generation A")
    archive[at + len("generation ")] = ord("Z")  # same size, one byte changed, plain tar
    before = tree_state(root)
    with FileServer() as server:
        server.files["rel.tar"] = bytes(archive)
        with pytest.raises(PlanBuildError) as caught:
            activate(store, f"{server.url}/rel.tar", pin=digest)
    assert "templates/launch/standard.md.j2 does not match MANIFEST.sha256" in str(caught.value)
    assert current_id(root) == old
    assert tree_state(root) == before


def test_a_pinned_digest_that_differs_is_refused_before_anything_is_staged(
    cli, tmp_path: Path, root: Path
) -> None:
    old = fake_bundle(tmp_path / "old", "OLD")[:16]
    cli("release.activate", "old", cwd=tmp_path)
    fake_bundle(tmp_path / "new", "NEW")
    before = tree_state(root)
    r = cli("release.activate", "new", "--sha256", "ab" * 32, cwd=tmp_path)
    assert r.code == 6
    assert f"digest mismatch for new: pinned {'ab' * 32}" in r.stderr
    assert "nothing was staged and the active release is unchanged" in r.stderr
    assert tree_state(root) == before
    assert current_id(root) == old


def test_a_malformed_digest_is_a_usage_error(cli, tmp_path: Path) -> None:
    fake_bundle(tmp_path / "b")
    r = cli("release.activate", "b", "--sha256", "1234", cwd=tmp_path)
    assert r.code == 2
    assert "--sha256 must be the 64-hex release digest" in r.stderr


def test_plain_http_to_another_host_is_refused_without_a_pin(cli, tmp_path: Path) -> None:
    r = cli("release.activate", "http://example.com/rel.tar.gz", cwd=tmp_path)
    assert r.code == 2
    assert "refusing unauthenticated http://example.com/rel.tar.gz" in r.stderr
    assert "use an https:// URL, or pin the content with --sha256" in r.stderr


def test_a_missing_source_or_unknown_scheme_is_a_usage_error(cli, tmp_path: Path) -> None:
    r = cli("release.activate", "nowhere", cwd=tmp_path)
    assert (r.code, r.stderr.splitlines()[0]) == (2, "plan-build: no bundle at nowhere")
    r = cli("release.activate", "ftp://host/rel.tar.gz", cwd=tmp_path)
    assert r.code == 2
    assert "unsupported source 'ftp://host/rel.tar.gz'" in r.stderr


def test_a_download_that_fails_names_the_http_status(tmp_path: Path, store: Store) -> None:
    with FileServer() as server, pytest.raises(PlanBuildError) as caught:
        activate(store, f"{server.url}/missing.tar.gz")
    assert "HTTP 404 Not Found" in str(caught.value)
    assert tree_state(store.root)["entries"] == []


# -------------------------------------------------------------------------------- bad input


def _bundle(path: Path, marker: str = "A") -> Path:
    fake_bundle(path, marker)
    return path


def _with(files: dict[str, bytes], **changes: bytes | None) -> dict[str, bytes]:
    out = dict(files)
    for key, value in changes.items():
        rel = key.replace("__", "/").replace("_md", ".md").replace("_j2", ".j2")
        if value is None:
            out.pop(rel, None)
        else:
            out[rel] = value
    return out


def _pyz(main: str, init: str = '__version__ = "9.0.0"\n', extra: str | None = None) -> bytes:
    buf = io.BytesIO()
    buf.write(b"#!/usr/bin/env python3\n")
    with zipfile.ZipFile(buf, "w") as archive:
        archive.writestr("__main__.py", main)
        archive.writestr("plan_build/__init__.py", init)
        if extra is not None:
            archive.writestr("plan_build/broken.py", extra)
    return buf.getvalue()


def _case_symlink(tmp: Path) -> Path:
    path = _bundle(tmp / "b")
    (path / "templates" / "link.md").symlink_to("/etc/passwd")
    return path


def _case_tampered(tmp: Path) -> Path:
    path = _bundle(tmp / "b")
    (path / "SKILL.md").write_text("---\nname: plan-build\ndescription: evil\n---\n")
    return path


def _case_extra(tmp: Path) -> Path:
    path = _bundle(tmp / "b")
    (path / "templates" / "extra.md").write_text("not listed\n")
    return path


def _case_files(tmp: Path, files: dict[str, bytes], manifest: str | None = None) -> Path:
    write_bundle(tmp / "b", files, manifest=manifest)
    return tmp / "b"


def _case_empty_archive(tmp: Path) -> Path:
    (tmp / "b.tar.gz").write_bytes(b"")
    return tmp / "b.tar.gz"


def _case_truncated(tmp: Path) -> Path:
    archive = tar_bundle(_bundle(tmp / "b"), tmp / "b.tar.gz")
    data = archive.read_bytes()
    archive.write_bytes(data[: len(data) // 2])
    return archive


def _case_not_archive(tmp: Path) -> Path:
    (tmp / "notes.txt").write_text("hello\n")
    return tmp / "notes.txt"


def _tar_with(tmp: Path, info: tarfile.TarInfo, data: bytes = b"") -> Path:
    path = _bundle(tmp / "b")
    archive = tmp / "evil.tar.gz"
    tar_bundle(path, archive, top=None)
    with tarfile.open(archive, "r:gz") as tar:
        members = [(m, tar.extractfile(m).read()) for m in tar.getmembers()]  # type: ignore[union-attr]
    with tarfile.open(archive, "w:gz") as tar:
        for member, content in members:
            tar.addfile(member, io.BytesIO(content))
        tar.addfile(info, io.BytesIO(data))
    return archive


def _case_tar_symlink(tmp: Path) -> Path:
    info = tarfile.TarInfo("templates/evil.md")
    info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
    return _tar_with(tmp, info)


def _case_tar_dotdot(tmp: Path) -> Path:
    info = tarfile.TarInfo("templates/../../outside.md")
    info.size = 4
    return _tar_with(tmp, info, b"evil")


def _case_tar_absolute(tmp: Path) -> Path:
    info = tarfile.TarInfo("/tmp/evil.md")
    info.size = 4
    return _tar_with(tmp, info, b"evil")


A = fake_files("A")
BAD_INPUTS = {
    "empty archive": (_case_empty_archive, "b.tar.gz is empty (0 bytes)"),
    "truncated archive": (_case_truncated, "is truncated or corrupt"),
    "not an archive": (_case_not_archive, "notes.txt is not a readable bundle archive"),
    "symlink in a directory": (_case_symlink, "contains a symbolic link: templates/link.md"),
    "symlink in an archive": (_case_tar_symlink, "contains a symbolic link: templates/evil.md"),
    "dot-dot path in an archive": (_case_tar_dotdot, "contains a path leaving the bundle"),
    "absolute path in an archive": (_case_tar_absolute, "contains an absolute path: /tmp/evil.md"),
    "tampered file": (_case_tampered, "SKILL.md does not match MANIFEST.sha256 (tampered"),
    "unlisted file": (_case_extra, "files its manifest does not list: templates/extra.md"),
    "missing skill": (
        lambda t: _case_files(t, _with(A, ARCHITECT_md=None)),
        "is incomplete: missing ARCHITECT.md",
    ),
    "empty skill": (
        lambda t: _case_files(t, _with(A, SKILL_md=b"")),
        "has empty files: SKILL.md",
    ),
    "skill without description": (
        lambda t: _case_files(t, _with(A, SKILL_md=b"---\nname: plan-build\n---\n# x\n")),
        "SKILL.md has no 'description' in its front matter",
    ),
    "zipapp with the wrong version": (
        lambda t: _case_files(t, _with(A, **{"plan-build.pyz": _pyz("print('plan-build 1')\n")})),
        "plan-build.pyz --version did not print 'plan-build 9.0.0'",
    ),
    "zipapp that does not compile": (
        lambda t: _case_files(
            t, _with(A, **{"plan-build.pyz": _pyz("print(1)\n", extra="def broken(:\n")})
        ),
        "plan-build.pyz/plan_build/broken.py does not compile",
    ),
    "zipapp that is no zip": (
        lambda t: _case_files(t, _with(A, **{"plan-build.pyz": b"#!/bin/sh\necho hi\n"})),
        "plan-build.pyz is not a readable zip",
    ),
    "broken template": (
        lambda t: _case_files(t, _with(A, templates__launch__standard_md_j2=b"{% if %}\n")),
        "templates/launch/standard.md.j2 line 1 is not a valid template",
    ),
    "deeply nested front matter": (
        lambda t: _case_files(
            t, _with(A, SKILL_md=("---\nname: " + "[" * 5000 + "]" * 5000 + "\n---\n").encode())
        ),
        "SKILL.md has front matter nested too deeply",
    ),
    "deeply nested template": (
        lambda t: _case_files(
            t,
            _with(
                A,
                templates__launch__standard_md_j2=(
                    "{{ " + "(" * 5000 + "1" + ")" * 5000 + " }}\n"
                ).encode(),
            ),
        ),
        "templates/launch/standard.md.j2 is nested too deeply to parse",
    ),
    "manifest out of order": (
        lambda t: _case_files(t, A, "".join(reversed(manifest_text(A).splitlines(True)))),
        "MANIFEST.sha256 is not in canonical form",
    ),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_input_is_refused_and_the_previous_release_stays_active(
    case: str, tmp_path: Path, store: Store, root: Path
) -> None:
    previous = activate(store, _bundle(tmp_path / "good", "GOOD")).id
    before = tree_state(root)
    make, message = BAD_INPUTS[case]
    bad_dir = tmp_path / "bad"
    bad_dir.mkdir()
    source = make(bad_dir)
    with pytest.raises(PlanBuildError) as caught:
        activate(store, source)
    assert message in str(caught.value)
    assert caught.value.code == 6
    assert current_id(root) == previous
    assert tree_state(root) == before  # nothing staged is left behind


def test_a_bad_bundle_through_the_cli_shows_what_and_fix(cli, tmp_path: Path) -> None:
    _case_symlink(tmp_path)
    r = cli("release.activate", "b", cwd=tmp_path)
    assert r.code == 6
    assert r.stderr == (
        "plan-build: b contains a symbolic link: templates/link.md\n"
        "  fix: bundles carry plain files only; rebuild it with plan-build release.build\n"
    )


# ----------------------------------------------------------------------------- the root


def test_a_read_only_root_is_reported_with_a_fix(
    tmp_path: Path, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    def read_only(*args: object, **kwargs: object) -> None:
        raise OSError(errno.EROFS, "Read-only file system")

    source = _bundle(tmp_path / "b")
    monkeypatch.setattr(Path, "mkdir", read_only)
    with pytest.raises(PlanBuildError) as caught:
        activate(store, source)
    assert caught.value.code == 3
    assert f"{store.root} is on a read-only filesystem" in caught.value.what
    assert caught.value.fix == "set PLAN_BUILD_HOME to a writable local directory"


def test_an_unwritable_root_is_reported_with_a_fix(
    cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if os.geteuid() == 0:
        # root ignores permission bits; simulate what a normal user gets instead
        import plan_build.release.store as store_module

        def denied(*args: object, **kwargs: object) -> int:
            raise PermissionError(errno.EACCES, "Permission denied")

        store = Store(tmp_path / "root", Console(stream=io.StringIO()))
        monkeypatch.setattr(store_module.os, "open", denied)
        with pytest.raises(PlanBuildError) as caught:
            store.ensure()
        assert f"permission denied for {tmp_path / 'root'}" in caught.value.what
        return
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    _bundle(tmp_path / "b")
    r = cli("release.activate", "b", cwd=tmp_path, env={"PLAN_BUILD_HOME": str(locked / "x")})
    assert r.code == 3
    assert "permission denied" in r.stderr


def test_plan_build_home_chooses_the_root(cli, tmp_path: Path) -> None:
    digest = fake_bundle(tmp_path / "b")
    r = cli("release.activate", "b", cwd=tmp_path, env={"PLAN_BUILD_HOME": str(tmp_path / "r")})
    assert r.code == 0, r.stderr
    assert os.readlink(tmp_path / "r" / "current") == f"releases/{digest[:16]}"


def test_a_current_directory_from_a_copied_install_is_not_replaced(
    tmp_path: Path, store: Store, root: Path
) -> None:
    (root / "current").mkdir(parents=True)
    (root / "current" / "plan_build.zsh").write_text("old\n")
    with pytest.raises(PlanBuildError) as caught:
        activate(store, _bundle(tmp_path / "b"))
    assert f"{root / 'current'} is not a symbolic link" in caught.value.what
    assert (root / "current" / "plan_build.zsh").read_text() == "old\n"


def test_leftovers_of_a_killed_run_are_cleaned_by_the_next_one(
    cli, tmp_path: Path, root: Path
) -> None:
    fake_bundle(tmp_path / "b")
    cli("release.activate", "b", cwd=tmp_path)
    stage = root / "releases" / ".stage-killed"
    (stage / "templates").mkdir(parents=True)
    (stage / "SKILL.md").write_text("half")
    (stage / "templates").chmod(0o555)
    (root / ".current.999.tmp").symlink_to("releases/nowhere")
    (root / "releases" / ".download-killed").write_bytes(b"partial")
    fake_bundle(tmp_path / "c", "C")
    r = cli("release.activate", "c", cwd=tmp_path)
    assert r.code == 0, r.stderr
    assert "cleaned up after an interrupted run: " in r.stderr
    left = [p.name for p in (root / "releases").iterdir() if p.name.startswith(".")]
    assert left == []
    assert not (root / ".current.999.tmp").is_symlink()


def test_a_second_activation_waits_for_the_lock_then_proceeds(tmp_path: Path, root: Path) -> None:
    import fcntl
    import subprocess
    import sys
    import time

    digest = fake_bundle(tmp_path / "b")
    Store(root).ensure()
    fd = os.open(root / ".lock", os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.pwrite(fd, b"4242\n", 0)
    child = subprocess.Popen(
        [sys.executable, "-m", "plan_build", "release.activate", "b"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stderr is not None
        line = child.stderr.readline()  # blocks until the child reports the wait
        assert line == "waiting for another plan-build release command (pid 4242) to finish …\n"
        time.sleep(0.2)
        assert child.poll() is None  # still waiting
        assert not (root / "current").exists()
    finally:
        os.close(fd)  # releases the lock
    _, err = child.communicate(timeout=30)
    assert child.returncode == 0, err
    assert err == f"activated {digest[:16]} (plan-build 9.0.0)\n"


def _snapshot(top: Path) -> dict[str, bytes | None]:
    return {
        p.relative_to(top).as_posix(): (p.read_bytes() if p.is_file() else None)
        for p in sorted(top.rglob("*"))
    }


@pytest.mark.parametrize("kind", ["directory", "archive"])
def test_a_copied_install_is_refused_before_anything_is_written(
    cli, tmp_path: Path, root: Path, kind: str
) -> None:
    (root / "current").mkdir(parents=True)
    (root / "current" / "plan_build.zsh").write_text("old\n")
    fake_bundle(tmp_path / "b")
    source = "b" if kind == "directory" else tar_bundle(tmp_path / "b", tmp_path / "b.tar.gz").name
    before = _snapshot(root)
    r = cli("release.activate", source, cwd=tmp_path)
    assert r.code == 3
    assert r.stderr == (
        f"plan-build: {root / 'current'} is not a symbolic link (a copied install?)\n"
        f"  fix: move it away (mv {root / 'current'} {root / 'current'}.old) and activate a "
        "release again\n"
    )
    assert _snapshot(root) == before  # nothing published, staged, locked or logged
