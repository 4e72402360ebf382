"""How big a release source may be, checked from headers before a byte is unpacked.

A real bundle is about 3 MB in a dozen files, so the caps are generous for it and small for a
decompression bomb: a tar member's header, a zip entry's central-directory record or a file's
stat says how much it would unpack to, and anything over a cap is refused by name, before its
data is read. See docs/release.md, "Limits".
"""

from __future__ import annotations

import struct
import tarfile
import weakref
import zipfile
from pathlib import Path

from plan_build.core.errors import PlanBuildError
from plan_build.release import invalid

MIB = 1 << 20
MAX_FILE = 64 * MIB  # one file of a bundle, unpacked (the zipapp is about 3 MB)
MAX_TOTAL = 200 * MIB  # all files of a bundle, unpacked
RATIO = 10  # ... and at most this many times the packed size of the archive or zipapp,
RATIO_FLOOR = 16 * MIB  # ... though never less than this (tiny bundles compress well)
MAX_ENTRIES = 4096  # members of a bundle archive (directories included)
MAX_HEADER = MIB  # a pax extended header or a GNU long name
MAX_MANIFEST = MIB  # MANIFEST.sha256
MAX_ZIP_ENTRIES = 20_000  # entries of the zipapp (about 750 today)
MAX_ZIP_DIRECTORY = 4 * MIB  # its central directory, read whole by zipfile

REFUSED_FIX = (
    "the active release is unchanged and nothing was kept; a bundle is a few MB of plain "
    "files: check the source, or rebuild it with plan-build release.build"
)


def human(size: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", MIB), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} bytes"


def total_cap(packed: int) -> int:
    """The most all files of an archive of `packed` bytes may unpack to."""
    return min(MAX_TOTAL, max(RATIO_FLOOR, RATIO * packed))


class Tally:
    """Adds up files as their headers are seen; refuses the first one over a cap."""

    def __init__(self, where: str, packed: int | None) -> None:
        self.where = where
        self.cap = MAX_TOTAL if packed is None else total_cap(packed)
        self.packed = packed
        self.total = 0
        self.entries = 0

    def entry(self, name: str, limit: int = MAX_ENTRIES) -> None:
        self.entries += 1
        if self.entries > limit:
            raise invalid(
                f"{self.where} has more than {limit} entries (refused at {name})", REFUSED_FIX
            )

    def file(self, name: str, size: int) -> None:
        if size > MAX_FILE:
            raise invalid(
                f"{self.where}: {name} would unpack to {human(size)}, more than the "
                f"{human(MAX_FILE)} one bundle file may have",
                REFUSED_FIX,
            )
        self.total += size
        if self.total > self.cap:
            of = f" for a {human(self.packed)} archive" if self.packed is not None else ""
            raise invalid(
                f"{self.where}: {name} takes the unpacked total to {human(self.total)}, more "
                f"than the {human(self.cap)} allowed{of}",
                REFUSED_FIX,
            )


class HeaderRefused(Exception):
    """Raised from inside tarfile's header parsing; turned into a PlanBuildError by the caller."""


# Bytes of pax and long-name headers read so far, per open archive: each member keeps its
# pax headers in memory, so the cap is on their sum, not on each one.
_header_bytes: weakref.WeakKeyDictionary[tarfile.TarFile, int] = weakref.WeakKeyDictionary()


class BoundedTarInfo(tarfile.TarInfo):
    """tarfile reads a pax header or a GNU long name into memory whole, before the caller sees
    any member: refuse oversize ones (and GNU sparse maps) from their header alone."""

    def _proc_member(self, tar: tarfile.TarFile) -> tarfile.TarInfo:
        long_header = (tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK)
        extended = (tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE)
        if self.type in (*long_header, *extended):
            used = _header_bytes.get(tar, 0) + self.size
            _header_bytes[tar] = used
            if used > MAX_HEADER:
                kind = "an extended header" if self.type in extended else "a long-name header"
                many = "" if used == self.size else f", after {human(used - self.size)} of others"
                raise HeaderRefused(
                    f"{kind} of {human(self.size)} ({self.name}{many}); plan-build reads at "
                    f"most {human(MAX_HEADER)} of such headers per archive"
                )
        if self.type == tarfile.GNUTYPE_SPARSE:
            raise HeaderRefused(f"a sparse file: {self.name}")
        processed: tarfile.TarInfo = tarfile.TarInfo._proc_member(self, tar)  # type: ignore[attr-defined]
        return processed


def header_refusal(exc: HeaderRefused, where: str) -> PlanBuildError:
    return invalid(f"{where} contains {exc}", REFUSED_FIX)


# ------------------------------------------------------------------------------- zipapps

_EOCD = struct.Struct("<4s4H2LH")


def check_zip_directory(path: Path, where: str) -> None:
    """Refuse a zip whose central directory (which zipfile reads whole) is oversize, from its
    end record alone. Without an end record zipfile refuses the file itself later."""
    size = path.stat().st_size
    with path.open("rb") as fh:
        fh.seek(max(0, size - (_EOCD.size + 0xFFFF)))
        tail = fh.read()
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or len(tail) - at < _EOCD.size:
        return
    _sig, _disk, _start, _here, entries, directory, _offset, _comment = _EOCD.unpack_from(tail, at)
    label = f"{where}: {path.name}"
    # zipfile trusts a ZIP64 locator just before the end record over the record's own numbers.
    zip64 = at >= 20 and tail[at - 20 : at - 16] == b"PK\x06\x07"
    if zip64 or entries == 0xFFFF or directory == 0xFFFFFFFF:
        raise invalid(f"{label} is a ZIP64 archive; a plan-build zipapp never is", REFUSED_FIX)
    if entries > MAX_ZIP_ENTRIES or directory > MAX_ZIP_DIRECTORY:
        raise invalid(
            f"{label} lists {entries} entries in a {human(directory)} directory "
            f"(at most {MAX_ZIP_ENTRIES} entries and {human(MAX_ZIP_DIRECTORY)})",
            REFUSED_FIX,
        )


def check_zip_entries(infos: list[zipfile.ZipInfo], path: Path, where: str) -> None:
    """Refuse entries that would unpack past the caps, by their recorded sizes: zipfile cuts
    every read at the recorded size, so these numbers bound what reading can produce."""
    tally = Tally(where, path.stat().st_size)
    for info in infos:
        name = f"{path.name}/{info.filename}"
        tally.entry(name, MAX_ZIP_ENTRIES)
        tally.file(name, info.file_size)
