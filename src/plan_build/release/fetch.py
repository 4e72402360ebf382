"""Where a release comes from: a bundle directory, a bundle archive, or a URL (https://,
file://, and plain http:// only to a loopback host or with a pinned digest).

Everything lands in a staging directory inside the releases root (same filesystem, so the
final rename is atomic). Before any file is staged, every header is checked against the limits
(release/limits.py), a pinned digest is compared with the source's manifest, and the source's
files must be exactly those the manifest lists; a download is kept only as a temporary file in
the root until then. Files then stream into the stage, each hashed against its manifest line.
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import tarfile
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from plan_build.core import errors
from plan_build.release import (
    MANIFEST,
    checkpoint,
    disk,
    invalid,
    limits,
    manifest,
    unavailable,
)
from plan_build.release.validate import check_listed, list_files

DOWNLOAD_TIMEOUT = 60.0
MAX_DOWNLOAD = 512 * 1024 * 1024
CHUNK = 1 << 16
STAGE_PREFIX = ".stage-"
DOWNLOAD_PREFIX = ".download-"


@dataclass(frozen=True)
class Source:
    kind: str  # "dir", "archive" or "url"
    text: str  # as the user gave it
    path: Path | None = None
    url: str | None = None


def classify(text: str, cwd: Path, *, pinned: bool) -> Source:
    """Decide what SOURCE is; a wrong or missing source is a usage error (exit 2)."""
    parsed = urllib.parse.urlsplit(text)
    scheme = parsed.scheme.lower()
    if scheme == "file":
        path = Path(urllib.request.url2pathname(parsed.path))
        if path.is_dir():
            return Source("dir", text, path=path)
        return Source("url", text, url=text)
    if scheme == "https":
        return Source("url", text, url=text)
    if scheme == "http":
        if not pinned and not _loopback(parsed.hostname or ""):
            raise errors.usage(
                f"refusing unauthenticated {text}: plain http:// can be altered in transit",
                "use an https:// URL, or pin the content with --sha256 DIGEST",
            )
        return Source("url", text, url=text)
    if scheme and "://" in text:
        raise errors.usage(
            f"unsupported source {text!r}",
            "give a bundle directory, a .tar.gz bundle, or an https:// or file:// URL",
        )
    path = Path(os.path.abspath(cwd / os.path.expanduser(text)))
    if path.is_dir():
        return Source("dir", text, path=path)
    if path.is_file():
        return Source("archive", text, path=path)
    raise errors.usage(
        f"no bundle at {text}",
        "build one with plan-build release.build, or give a directory, .tar.gz or URL",
    )


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def stage(source: Source, releases: Path, pin: str | None) -> Path:
    """Copy `source` into a new `releases/.stage-*` directory and return it.

    With `pin`, the source's manifest digest must equal it before anything is staged.
    On any failure nothing is left behind.
    """
    if source.url is not None:
        download = _download(source.url, releases)
        try:
            return _stage_archive(download, source.text, releases, pin)
        finally:
            download.unlink(missing_ok=True)
    if source.path is None:  # pragma: no cover - classify() always sets one of them
        raise ValueError(f"source without path or URL: {source}")
    if source.kind == "dir":
        return _stage_dir(source.path, source.text, releases, pin)
    return _stage_archive(source.path, source.text, releases, pin)


def _new_stage(releases: Path) -> Path:
    return Path(tempfile.mkdtemp(prefix=STAGE_PREFIX, dir=releases))


def _check_pin(text: bytes, pin: str | None, where: str) -> None:
    if pin is None:
        return
    actual = manifest.digest_of(text.decode("utf-8", errors="replace"))
    if actual != pin:
        raise invalid(
            f"digest mismatch for {where}: pinned {pin}, its manifest is {actual}",
            "nothing was staged and the active release is unchanged; check the source or the pin",
        )


# ----------------------------------------------------------- checked before anything is staged


def _check_listing(raw: bytes, pin: str | None, where: str, present: set[str]) -> manifest.Manifest:
    """The pin, the manifest's form, and the source's files against the manifest's list: all
    before a byte is staged, so an unlisted or missing file is refused by name right away."""
    _check_pin(raw, pin, where)
    return check_listed(raw, present, where, limits.REFUSED_FIX)


def _corrupt(where: str, exc: BaseException) -> errors.PlanBuildError:
    return invalid(f"{where} is truncated or corrupt ({exc})", "download or build the bundle again")


def _check_manifest_size(size: int, where: str) -> None:
    if size > limits.MAX_MANIFEST:
        raise invalid(
            f"{where}: {MANIFEST} is {limits.human(size)}, more than the "
            f"{limits.human(limits.MAX_MANIFEST)} a manifest may have",
            limits.REFUSED_FIX,
        )


def _copy_checked(
    source: IO[bytes], dest: Path, rel: str, *, size: int, sha: str | None, where: str
) -> None:
    """Stream one file into the stage (bounded memory), refusing it when it is not exactly
    `size` bytes or does not hash to its manifest line."""
    digest = hashlib.sha256()
    seen = 0

    def chunks() -> Iterator[bytes]:
        nonlocal seen
        while True:
            try:
                chunk = source.read(CHUNK)
            except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
                raise _corrupt(where, exc) from None
            if not chunk:
                return
            seen += len(chunk)
            if seen > size:
                return  # it grew while being copied: refused below, never written past `size`
            digest.update(chunk)
            yield chunk

    disk.write_synced(dest, chunks())
    if seen != size:
        raise invalid(
            f"{where}: {rel} changed size while it was read ({size} bytes expected)"
            if seen > size
            else f"{where} is truncated ({rel} is cut short)",
            "download or build the bundle again",
        )
    if sha is not None and digest.hexdigest() != sha:
        raise invalid(
            f"{where}: {rel} does not match {MANIFEST} (tampered or corrupted)",
            "rebuild or download the bundle again",
        )


# ---------------------------------------------------------------------------- directories


def _stage_dir(path: Path, where: str, releases: Path, pin: str | None) -> Path:
    files = list_files(path, where)  # refuses links and special files before copying anything
    if MANIFEST not in files:
        raise invalid(
            f"{where} has no {MANIFEST}", "build the bundle with plan-build release.build"
        )
    tally = limits.Tally(where, None)
    sizes: dict[str, int] = {}
    for rel in files:
        tally.entry(rel)
        sizes[rel] = (path / rel).lstat().st_size
        tally.file(rel, sizes[rel])
    _check_manifest_size(sizes[MANIFEST], where)
    listed = _check_listing((path / MANIFEST).read_bytes(), pin, where, set(files))
    hashes = dict(listed.entries)
    target = _new_stage(releases)
    try:
        for rel in files:
            checkpoint("copy")
            dest = target / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            with (path / rel).open("rb") as fh:
                _copy_checked(fh, dest, rel, size=sizes[rel], sha=hashes.get(rel), where=where)
    except BaseException:
        disk.remove_tree(target)
        raise
    return target


# ------------------------------------------------------------------------------- archives


def _stage_archive(path: Path, where: str, releases: Path, pin: str | None) -> Path:
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise errors.usage(f"cannot read {where}: {exc.strerror}") from None
    if size == 0:
        raise invalid(f"{where} is empty (0 bytes)", "download or build the bundle again")
    try:
        # BoundedTarInfo refuses oversize pax and long-name headers before tarfile reads them.
        opened = tarfile.open(path, "r:*", tarinfo=limits.BoundedTarInfo)  # noqa: SIM115
    except limits.HeaderRefused as exc:
        raise limits.header_refusal(exc, where) from None
    except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
        raise invalid(
            f"{where} is not a readable bundle archive ({exc})",
            "give a .tar.gz made by plan-build release.build, or download it again",
        ) from None
    with opened as tar:
        members = _members(tar, where, limits.Tally(where, size))
        if MANIFEST not in members:
            raise invalid(f"{where} has no {MANIFEST}", "build it with plan-build release.build")
        _check_manifest_size(members[MANIFEST].size, where)
        listed = _check_listing(_read(tar, members[MANIFEST], where), pin, where, set(members))
        hashes = dict(listed.entries)
        target = _new_stage(releases)
        try:
            # In archive order: a compressed stream is read forward once, never rewound per file.
            for rel, member in sorted(members.items(), key=lambda item: item[1].offset):
                checkpoint("extract")
                dest = target / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                handle = _open_member(tar, member, where)
                _copy_checked(handle, dest, rel, size=member.size, sha=hashes.get(rel), where=where)
        except BaseException:
            disk.remove_tree(target)
            raise
    return target


def _next(tar: tarfile.TarFile, where: str) -> tarfile.TarInfo | None:
    try:
        return tar.next()
    except limits.HeaderRefused as exc:
        raise limits.header_refusal(exc, where) from None
    except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
        raise _corrupt(where, exc) from None


def _members(tar: tarfile.TarFile, where: str, tally: limits.Tally) -> dict[str, tarfile.TarInfo]:
    """Regular files by bundle-relative path, from the headers alone (no member's data is
    read): links, devices, escaping paths and members over the size caps are refused as soon
    as their header is seen, so a bomb costs one header, not its contents."""
    named: list[tuple[list[str], tarfile.TarInfo]] = []
    while (info := _next(tar, where)) is not None:
        tally.entry(info.name)
        name = info.name
        while name.startswith("./"):
            name = name[2:]
        if name.startswith("/"):
            raise invalid(f"{where} contains an absolute path: {info.name}", "rebuild the bundle")
        parts = [p for p in name.split("/") if p not in ("", ".")]
        if ".." in parts:
            raise invalid(
                f"{where} contains a path leaving the bundle: {info.name}", "rebuild the bundle"
            )
        if info.issym() or info.islnk():
            kind = "symbolic" if info.issym() else "hard"
            raise invalid(
                f"{where} contains a {kind} link: {info.name} -> {info.linkname}",
                "bundles carry plain files only; rebuild it with plan-build release.build",
            )
        if info.isdir() or not parts:
            continue
        if not info.isreg() or info.sparse is not None:
            raise invalid(f"{where} contains a special file: {info.name}", "rebuild the bundle")
        tally.file(info.name, info.size)
        named.append((parts, info))
    if not named:
        raise invalid(f"{where} contains no files", "download or build the bundle again")
    tops = {parts[0] for parts, _ in named}
    strip = len(tops) == 1 and all(len(parts) > 1 for parts, _ in named)
    members: dict[str, tarfile.TarInfo] = {}
    for parts, info in named:
        rel = "/".join(parts[1:] if strip else parts)
        manifest.check_relpath(rel, where)
        if rel in members:
            raise invalid(f"{where} contains {rel} twice", "rebuild the bundle")
        members[rel] = info
    return members


def _open_member(tar: tarfile.TarFile, info: tarfile.TarInfo, where: str) -> IO[bytes]:
    try:
        handle = tar.extractfile(info)
    except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
        raise _corrupt(where, exc) from None
    if handle is None:  # pragma: no cover - _members keeps regular files only
        raise invalid(f"{where}: {info.name} is not a file")
    return handle


def _read(tar: tarfile.TarFile, info: tarfile.TarInfo, where: str) -> bytes:
    """A small member (the manifest, size-checked by the caller) read whole."""
    try:
        data = _open_member(tar, info, where).read()
    except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
        raise _corrupt(where, exc) from None
    if len(data) != info.size:
        raise invalid(f"{where} is truncated ({info.name} is cut short)", "download it again")
    return data


# ------------------------------------------------------------------------------ downloads


def _download(url: str, releases: Path) -> Path:
    """Stream `url` into a temporary file inside the releases root (same filesystem)."""
    fd, name = tempfile.mkstemp(prefix=DOWNLOAD_PREFIX, dir=releases)
    target = Path(name)
    try:
        with os.fdopen(fd, "wb") as out:
            opener = _opener(url)
            try:
                response = opener.open(url, timeout=DOWNLOAD_TIMEOUT)
            except urllib.error.HTTPError as exc:
                exc.close()  # it holds the connection open
                raise unavailable(
                    f"cannot download {url}: HTTP {exc.code} {exc.reason}", "check the URL"
                ) from None
            except (urllib.error.URLError, OSError, ValueError) as exc:
                reason = getattr(exc, "reason", exc)
                raise unavailable(
                    f"cannot download {url}: {reason}", "check the URL and the network"
                ) from None
            with response:
                total = 0
                while True:
                    checkpoint("download")
                    try:
                        chunk = response.read(CHUNK)
                    except (OSError, ValueError) as exc:
                        raise invalid(f"download of {url} broke off: {exc}", "try again") from None
                    if not chunk:
                        break
                    total += len(chunk)
                    if total > MAX_DOWNLOAD:
                        raise invalid(
                            f"{url} is larger than {MAX_DOWNLOAD // (1024 * 1024)} MiB",
                            "check the URL: a bundle is a few MiB",
                        )
                    out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
    except BaseException:
        target.unlink(missing_ok=True)
        raise
    return target


def _opener(url: str) -> urllib.request.OpenerDirector:
    host = urllib.parse.urlsplit(url).hostname or ""
    if _loopback(host):  # a proxy from the environment must not intercept a local mirror
        return urllib.request.build_opener(urllib.request.ProxyHandler({}))
    return urllib.request.build_opener()
