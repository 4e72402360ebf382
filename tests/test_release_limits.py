"""Release sources are bounded before anything is unpacked: decompression bombs, unlisted
members, links and devices, oversize files and totals are refused by their headers, naming the
member, with nothing staged and with memory far below what the archive claims to hold.

The archives are made with tarfile's own headers but never hold the zeros they claim: a sparse
file for a plain .tar, one repeated gzip member for a .tar.gz (tests/support/releases.py).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from plan_build import release
from plan_build.core.errors import PlanBuildError
from plan_build.core.ui import Console
from plan_build.release import actions, fetch
from plan_build.release.store import Store
from tests.support.releases import (
    FileServer,
    bomb_tar,
    bundle_members,
    fake_bundle,
    fake_files,
    file_member,
    manifest_text,
    sha,
    tar_bundle,
    write_bundle,
    zip_bomb,
)

GIB = 1 << 30
MIB = 1 << 20


@pytest.fixture
def root(private_home: Path) -> Path:
    return private_home / ".local" / "share" / "plan-build"


@pytest.fixture
def store(root: Path) -> Store:
    return Store(root, Console(stream=io.StringIO()))


@pytest.fixture
def steps(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The staging steps an activation reached ('extract' and 'copy' once per file)."""
    seen: list[str] = []
    monkeypatch.setattr(release, "checkpoint_hooks", [seen.append])
    return seen


def activate(store: Store, source: Path | str, pin: str | None = None) -> actions.Activation:
    src = fetch.classify(str(source), Path.cwd(), pinned=pin is not None)
    return actions.activate(store, src, pin)


def everything_under(root: Path) -> list[str]:
    """Every path under the root (staging directories and downloads included)."""
    if not root.exists():
        return []
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


LAYOUT = {".lock", ".bind.lock", "releases", "leases"}  # what any release command creates


def refused(store: Store, source: Path | str, pin: str | None = None) -> PlanBuildError:
    with pytest.raises(PlanBuildError) as caught:
        activate(store, source, pin)
    assert caught.value.code == 6
    assert caught.value.fix  # every refusal says what to do
    assert [p for p in everything_under(store.root) if p not in LAYOUT] == []  # nothing staged
    return caught.value


A = fake_files("A")
PIN = sha(manifest_text(A).encode())


def bomb(path: Path, name: str = "bundle/templates/zeros.md", size: int = 2 * GIB) -> Path:
    """A valid bundle plus one unlisted member of `size` zeros (about 1 MB per GiB as .tar.gz,
    a hole as .tar)."""
    return bomb_tar(path, [*bundle_members(A), (file_member(name), size)])


# ------------------------------------------------------------- refused by the header alone


@pytest.mark.parametrize("suffix", [".tar.gz", ".tar"])
def test_a_huge_member_is_refused_by_its_header_even_with_a_matching_pin(
    tmp_path: Path, store: Store, steps: list[str], suffix: str
) -> None:
    archive = bomb(tmp_path / f"bomb{suffix}")
    assert archive.stat().st_blocks * 512 < 8 * MIB  # the test itself stays cheap
    error = refused(store, archive, PIN)
    assert "bundle/templates/zeros.md" in error.what
    assert "2.0 GiB" in error.what
    assert "extract" not in steps  # not one byte was unpacked
    assert not list(store.releases.glob(".stage-*"))


def test_a_downloaded_bomb_is_refused_and_the_download_removed(
    tmp_path: Path, store: Store, steps: list[str]
) -> None:
    archive = bomb(tmp_path / "bomb.tar.gz")
    with FileServer() as server:
        server.files["rel.tar.gz"] = archive.read_bytes()
        error = refused(store, f"{server.url}/rel.tar.gz", PIN)
    assert "bundle/templates/zeros.md would unpack to 2.0 GiB" in error.what
    assert "extract" not in steps


def test_an_unlisted_member_is_refused_before_anything_is_extracted(
    tmp_path: Path, store: Store, steps: list[str]
) -> None:
    archive = bomb_tar(
        tmp_path / "extra.tar.gz",
        [*bundle_members(A), (file_member("bundle/templates/extra.md"), b"not listed\n")],
    )
    error = refused(store, archive, PIN)
    assert "files its manifest does not list: templates/extra.md" in error.what
    assert "extract" not in steps


def test_a_listed_file_missing_from_the_archive_is_refused_before_extraction(
    tmp_path: Path, store: Store, steps: list[str]
) -> None:
    members = [m for m in bundle_members(A) if m[0].name != "bundle/SKILL.md"]
    error = refused(store, bomb_tar(tmp_path / "short.tar.gz", members))
    assert "missing files its manifest lists: SKILL.md" in error.what
    assert "extract" not in steps


def test_the_unpacked_total_is_capped_and_the_member_that_passes_it_is_named(
    tmp_path: Path, store: Store, steps: list[str]
) -> None:
    # Each member is under the per-file cap; together they are far more than a tiny archive
    # may unpack to (10x its size, at least 16 MiB).
    members = [(file_member(f"bundle/templates/z{n}.md"), 10 * MIB) for n in range(3)]
    archive = bomb_tar(tmp_path / "total.tar.gz", [*bundle_members(A), *members])
    error = refused(store, archive)
    assert "bundle/templates/z1.md" in error.what
    assert "unpacked total" in error.what
    assert "extract" not in steps


def test_an_archive_with_too_many_members_is_refused(
    tmp_path: Path, store: Store, steps: list[str]
) -> None:
    members = [(file_member(f"bundle/templates/t{n}.md"), b"x") for n in range(5000)]
    error = refused(store, bomb_tar(tmp_path / "many.tar.gz", [*bundle_members(A), *members]))
    assert "more than 4096 entries" in error.what
    assert "extract" not in steps


def _special(name: str, kind: bytes, linkname: str = "") -> tarfile.TarInfo:
    info = file_member(name)
    info.type = kind
    info.linkname = linkname
    return info


@pytest.mark.parametrize(
    ("member", "message"),
    [
        (
            _special("bundle/templates/s.md", tarfile.SYMTYPE, "/etc/passwd"),
            "a symbolic link: bundle/templates/s.md -> /etc/passwd",
        ),
        (
            _special("bundle/templates/h.md", tarfile.LNKTYPE, "bundle/SKILL.md"),
            "a hard link: bundle/templates/h.md -> bundle/SKILL.md",
        ),
        (_special("bundle/templates/dev", tarfile.CHRTYPE), "a special file: bundle/templates/dev"),
        (
            _special("bundle/templates/fifo", tarfile.FIFOTYPE),
            "a special file: bundle/templates/fifo",
        ),
    ],
    ids=["symlink", "hardlink", "device", "fifo"],
)
def test_links_and_devices_are_refused_before_extraction(
    tmp_path: Path, store: Store, steps: list[str], member: tarfile.TarInfo, message: str
) -> None:
    archive = bomb_tar(tmp_path / "special.tar.gz", [*bundle_members(A), (member, b"")])
    error = refused(store, archive)
    assert message in error.what
    assert "extract" not in steps


def test_a_huge_extended_header_is_refused_without_being_read(tmp_path: Path, store: Store) -> None:
    header = _special("././@PaxHeader", tarfile.XHDTYPE)
    archive = bomb_tar(tmp_path / "pax.tar.gz", [(header, 2 * GIB), *bundle_members(A)])
    error = refused(store, archive)
    assert "extended header" in error.what
    assert "2.0 GiB" in error.what


def test_many_extended_headers_are_capped_together(tmp_path: Path, store: Store) -> None:
    # Each member keeps its pax header in memory: 4096 members of 1 MiB each would be 4 GiB.
    members = bundle_members(A)
    for info, _ in members:
        info.pax_headers = {"comment": "x" * (300 << 10)}
    error = refused(store, bomb_tar(tmp_path / "fat.tar.gz", members))
    assert "an extended header of 300.0 KiB" in error.what
    assert "after 900.0 KiB of others" in error.what


def test_a_sparse_gnu_member_is_refused(tmp_path: Path, store: Store) -> None:
    # GNU sparse members carry a map of holes; a bundle never has them.
    info = _special("bundle/templates/sparse.md", tarfile.GNUTYPE_SPARSE)
    archive = bomb_tar(tmp_path / "sparse.tar", [*bundle_members(A), (info, b"")])
    error = refused(store, archive)
    assert "bundle/templates/sparse.md" in error.what


def test_a_directory_source_with_an_oversize_file_is_refused_before_copying(
    tmp_path: Path, store: Store, steps: list[str]
) -> None:
    path = tmp_path / "b"
    fake_bundle(path)
    with (path / "templates" / "zeros.md").open("wb") as fh:
        fh.truncate(100 * MIB)  # a hole: no disk used
    error = refused(store, path)
    assert "templates/zeros.md" in error.what
    assert "copy" not in steps


def test_a_directory_source_with_an_unlisted_file_is_refused_before_copying(
    tmp_path: Path, store: Store, steps: list[str]
) -> None:
    path = tmp_path / "b"
    fake_bundle(path)
    (path / "templates" / "extra.md").write_text("not listed\n")
    error = refused(store, path)
    assert "files its manifest does not list: templates/extra.md" in error.what
    assert "copy" not in steps


def test_a_zipapp_bomb_is_refused_before_its_entries_are_read(tmp_path: Path, store: Store) -> None:
    pyz = zip_bomb(
        {
            "__main__.py": b"print('plan-build 9.0.0')\n",
            "plan_build/__init__.py": b'__version__ = "9.0.0"\n',
        },
        "plan_build/zeros.py",
        2 * GIB,
    )
    files = {**A, "plan-build.pyz": pyz}
    write_bundle(tmp_path / "b", files)
    error = refused(store, tmp_path / "b")
    assert "plan-build.pyz/plan_build/zeros.py" in error.what
    assert "2.0 GiB" in error.what


@pytest.mark.parametrize("zip64", [False, True], ids=["oversize directory", "zip64 locator"])
def test_a_zipapp_whose_directory_is_oversize_is_refused_before_it_is_read(
    tmp_path: Path, store: Store, zip64: bool
) -> None:
    pyz = bytearray(fake_files("A")["plan-build.pyz"])
    end = pyz.rindex(b"PK\x05\x06")
    if zip64:  # a locator pointing zipfile at a ZIP64 record of its choosing
        pyz[end:end] = b"PK\x06\x07" + bytes(16)
    else:  # the end record claims a 3 GiB central directory
        pyz[end + 12 : end + 16] = (3 << 30).to_bytes(4, "little")
    write_bundle(tmp_path / "b", {**A, "plan-build.pyz": bytes(pyz)})
    error = refused(store, tmp_path / "b")
    assert "plan-build.pyz" in error.what
    assert ("ZIP64" if zip64 else "3.0 GiB directory") in error.what


def test_a_real_sized_archive_still_activates(tmp_path: Path, store: Store) -> None:
    # The caps leave room: a bundle with a 3 MiB incompressible zipapp-sized file passes.
    files = {**A, "templates/blob.md": os.urandom(3 * MIB).hex()[: 3 * MIB].encode()}
    digest = write_bundle(tmp_path / "b", files)
    archive = tar_bundle(tmp_path / "b", tmp_path / "b.tar.gz")
    assert activate(store, archive, digest).digest == digest


# ------------------------------------------------------------------------ bounded memory

CHILD = """
import json, resource, sys
from pathlib import Path
# Far below what the bomb holds: an unbounded read dies here instead of eating the machine.
try:
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
except (ValueError, OSError):  # macOS does not enforce it; the peak below still tells
    pass
from plan_build.core.errors import PlanBuildError
from plan_build.release import actions, fetch
from plan_build.release.store import Store
source, root, pin = sys.argv[1], Path(sys.argv[2]), sys.argv[3] or None
outcome = {"code": 0, "message": ""}
try:
    actions.activate(Store(root), fetch.classify(source, Path.cwd(), pinned=bool(pin)), pin)
except PlanBuildError as exc:
    outcome = {"code": int(exc.code), "message": str(exc)}
except MemoryError:
    outcome = {"code": -1, "message": "MemoryError"}
# This process's own peak: VmHWM belongs to the memory of this program. ru_maxrss would not do
# on Linux: exec keeps the parent's high-water mark (a pytest worker's hundreds of MB).
try:
    status = Path("/proc/self/status").read_text()
    outcome["peak"] = next(
        int(line.split()[1]) * 1024 for line in status.splitlines() if line.startswith("VmHWM:")
    )
except (OSError, StopIteration):
    scale = 1 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes on macOS, KiB on Linux
    outcome["peak"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale
print(json.dumps(outcome))
"""


def _pax_bomb(tmp: Path) -> tuple[Path, str]:
    header = _special("././@PaxHeader", tarfile.XHDTYPE)
    return bomb_tar(tmp / "pax.tar.gz", [(header, 2 * GIB), *bundle_members(A)]), "extended header"


def _zip_in_archive(tmp: Path) -> tuple[Path, str]:
    pyz = zip_bomb(
        {
            "__main__.py": b"print('plan-build 9.0.0')\n",
            "plan_build/__init__.py": b'__version__ = "9.0.0"\n',
        },
        "plan_build/zeros.py",
        2 * GIB,
    )
    files = {**A, "plan-build.pyz": pyz}
    write_bundle(tmp / "b", files)
    return tar_bundle(tmp / "b", tmp / "zip.tar.gz"), "plan_build/zeros.py"


BOMBS = {
    "tar.gz member": lambda t: (bomb(t / "bomb.tar.gz"), "templates/zeros.md"),
    "sparse tar member": lambda t: (bomb(t / "bomb.tar"), "templates/zeros.md"),
    "pax header": _pax_bomb,
    "zipapp entry": _zip_in_archive,
}


@pytest.mark.parametrize("kind", list(BOMBS))
def test_a_decompression_bomb_is_refused_with_bounded_memory(
    tmp_path: Path, root: Path, kind: str
) -> None:
    archive, named = BOMBS[kind](tmp_path)
    result = subprocess.run(
        [sys.executable, "-c", CHILD, str(archive), str(root), ""],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout)
    assert outcome["code"] == 6, outcome["message"]
    assert named in outcome["message"]
    assert outcome["peak"] < 150 * MIB  # the member claims 2 GiB
    assert [p.name for p in (root / "releases").iterdir()] == []  # no .stage-*, no download
