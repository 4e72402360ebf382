"""Release test helpers: a plan-build checkout in tmp, small fake bundles that validate in
milliseconds, and readers that check what a bound run would see."""

from __future__ import annotations

import functools
import hashlib
import io
import os
import shutil
import tarfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SKILL = "---\nname: {name}\ndescription: {name} test skill ({marker})\n---\n# {name}\n{marker}\n"
TEMPLATE = "generation {marker}\nHello {{{{ name }}}}\n"
FAKE_MAIN = (
    "import sys\n"
    "from plan_build import __version__\n"
    "if '--version' in sys.argv:\n"
    "    print('plan-build ' + __version__)\n"
)


def make_checkout(
    path: Path, *, skills: bool = True, templates: bool = True, marker: str = "A"
) -> Path:
    """A plan-build source checkout: the real package and pyproject, small skills, templates."""
    path.mkdir(parents=True)
    shutil.copy(ROOT / "pyproject.toml", path / "pyproject.toml")
    shutil.copytree(
        ROOT / "src" / "plan_build",
        path / "src" / "plan_build",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
    )
    (path / "skills").mkdir()
    if skills:
        (path / "skills" / "SKILL.md").write_text(SKILL.format(name="plan-build", marker=marker))
        (path / "skills" / "ARCHITECT.md").write_text(
            SKILL.format(name="plan-build-architect", marker=marker)
        )
    if templates:
        (path / "templates" / "launch").mkdir(parents=True)
        (path / "templates" / "launch" / "standard.md.j2").write_text(
            TEMPLATE.format(marker=marker)
        )
        (path / "templates" / "launch" / ".gitkeep").write_text("")
    return path


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def manifest_text(files: dict[str, bytes]) -> str:
    return "".join(f"{sha(files[rel])}  {rel}\n" for rel in sorted(files))


def zip_entry(name: str) -> zipfile.ZipInfo:
    return zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))


def fake_files(marker: str, version: str = "9.0.0") -> dict[str, bytes]:
    """The files of a tiny but valid bundle; every file carries `marker` (its generation)."""
    buf = io.BytesIO()
    buf.write(b"#!/usr/bin/env python3\n")
    with zipfile.ZipFile(buf, "w") as archive:  # fixed timestamps: same marker, same bytes
        archive.writestr(zip_entry("__main__.py"), FAKE_MAIN + f"# {marker}\n")
        archive.writestr(
            zip_entry("plan_build/__init__.py"), f'__version__ = "{version}"\n# {marker}\n'
        )
    return {
        "plan-build.pyz": buf.getvalue(),
        "SKILL.md": SKILL.format(name="plan-build", marker=marker).encode(),
        "ARCHITECT.md": SKILL.format(name="plan-build-architect", marker=marker).encode(),
        "templates/launch/standard.md.j2": TEMPLATE.format(marker=marker).encode(),
    }


def write_bundle(path: Path, files: dict[str, bytes], *, manifest: str | None = None) -> str:
    """Write a bundle directory; returns its digest (sha256 of MANIFEST.sha256)."""
    text = manifest if manifest is not None else manifest_text(files)
    for rel, data in files.items():
        target = path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    (path / "MANIFEST.sha256").write_text(text)
    return sha(text.encode())


def fake_bundle(path: Path, marker: str = "A", version: str = "9.0.0") -> str:
    return write_bundle(path, fake_files(marker, version))


def tar_bundle(directory: Path, target: Path, *, top: str | None = "bundle") -> Path:
    mode = "w:gz" if target.name.endswith(".gz") else "w"
    with tarfile.open(target, mode) as tar:
        for file in sorted(p for p in directory.rglob("*") if p.is_file() or p.is_symlink()):
            rel = file.relative_to(directory).as_posix()
            tar.add(file, arcname=f"{top}/{rel}" if top else rel, recursive=False)
    return target


def check_bound(release: Path) -> str:
    """What a bound reader sees in `release`: 'ok', 'partial' (hash mismatch or missing file)
    or 'mixed' (files from different generations)."""
    try:
        lines = (release / "MANIFEST.sha256").read_text().splitlines()
    except OSError:
        return "partial"
    markers = set()
    for line in lines:
        digest, rel = line.split("  ", 1)
        try:
            data = (release / rel).read_bytes()
        except OSError:
            return "partial"
        if sha(data) != digest:
            return "partial"
        if rel.endswith((".md", ".j2")):
            markers.add(_marker(data))
    return "ok" if len(markers) == 1 else "mixed"


def _marker(data: bytes) -> str:
    text = data.decode()
    if text.startswith("generation "):
        return text.split()[1]
    return text.rstrip("\n").rsplit("\n", 1)[-1]


def tree_state(root: Path) -> dict[str, object]:
    """What the releases root holds (for 'nothing left behind' assertions)."""
    releases = root / "releases"
    return {
        "current": os.readlink(root / "current") if (root / "current").is_symlink() else None,
        "entries": sorted(p.name for p in releases.iterdir()) if releases.is_dir() else [],
    }


class FileServer:
    """A loopback HTTP server answering GET /<name> with the bytes in `files` (else 404)."""

    def __init__(self) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.files: dict[str, bytes] = {}
        self.requests: list[str] = []
        files, requests = self.files, self.requests

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                requests.append(self.path)
                data = files.get(self.path.lstrip("/"))
                if data is None:
                    self.send_error(404, "Not Found")
                    return
                self.send_response(200)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> FileServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


# ------------------------------------------------------------------- oversized archives

ZERO_BLOCK = 1 << 24  # 16 MiB of zeros, compressed once and repeated


@functools.cache
def _zero_member() -> bytes:
    import gzip

    return gzip.compress(bytes(ZERO_BLOCK), compresslevel=9, mtime=0)


def bomb_tar(target: Path, members: list[tuple[tarfile.TarInfo, bytes | int]]) -> Path:
    """A .tar or .tar.gz whose members' data is bytes or a count of zero bytes.

    The zeros are never held or written: a plain .tar gets a hole (a sparse file), a .tar.gz
    gets one gzip member of 16 MiB of zeros repeated (gzip readers join members), so an archive
    holding a 2 GiB member costs milliseconds and about 2 MB to make.
    """
    import gzip

    pieces: list[bytes | int] = []
    for info, data in members:
        info.size = data if isinstance(data, int) else len(data)
        pieces.append(info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape"))
        pieces.append(data)
        pieces.append(bytes(-info.size % 512))
    pieces.append(bytes(1024))  # end of archive
    zipped = target.name.endswith(".gz")
    with target.open("wb") as out:
        for piece in pieces:
            if isinstance(piece, bytes):
                out.write(gzip.compress(piece, mtime=0) if zipped else piece)
            elif zipped:
                full, rest = divmod(piece, ZERO_BLOCK)
                out.write(_zero_member() * full)
                out.write(gzip.compress(bytes(rest), mtime=0))
            else:
                out.seek(piece, os.SEEK_CUR)
        out.truncate()
    return target


def file_member(name: str, mode: int = 0o644) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.mode = mode
    return info


def bundle_members(
    files: dict[str, bytes], top: str = "bundle"
) -> list[tuple[tarfile.TarInfo, bytes | int]]:
    """A valid bundle's members (manifest included), ready for bomb_tar."""
    everything = {**files, "MANIFEST.sha256": manifest_text(files).encode()}
    return [(file_member(f"{top}/{rel}"), everything[rel]) for rel in sorted(everything)]


def zip_bomb(entries: dict[str, bytes], huge: str, size: int) -> bytes:
    """A stored-entries zip plus one deflated entry `huge` that inflates to `size` zeros.

    The deflate stream is one fully flushed 16 MiB block of zeros repeated, so it is written
    in milliseconds; its CRC is not that of the zeros (a reader that gets that far has
    already inflated everything).
    """
    import struct
    import zlib

    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = compressor.compress(bytes(ZERO_BLOCK)) + compressor.flush(zlib.Z_FULL_FLUSH)
    tail = zlib.compressobj(9, zlib.DEFLATED, -15)
    full, rest = divmod(size, ZERO_BLOCK)
    deflated = block * full + tail.compress(bytes(rest)) + tail.flush()
    records = [
        (name.encode(), 0, zlib.crc32(data), data, len(data)) for name, data in entries.items()
    ]
    records.append((huge.encode(), 8, 0, deflated, size))
    body, central = b"", b""
    for name, method, crc, data, usize in records:
        offset = len(body)
        body += struct.pack(
            "<4s5H3L2H", b"PK\x03\x04", 20, 0, method, 0, 0x21, crc, len(data), usize, len(name), 0
        )
        body += name + data
        central += struct.pack(
            "<4s6H3L5H2L",
            b"PK\x01\x02",
            20,
            20,
            0,
            method,
            0,
            0x21,
            crc,
            len(data),
            usize,
            len(name),
            0,
            0,
            0,
            0,
            0o100644 << 16,
            offset,
        )
        central += name
    end = struct.pack(
        "<4s4H2LH", b"PK\x05\x06", 0, 0, len(records), len(records), len(central), len(body), 0
    )
    return body + central + end


def resolve_current(root: Path) -> Path | None:
    """`<root>/current` resolved once to the absolute release directory (None if unset), as a
    run that binds would: every later read goes through this path, never the link."""
    try:
        return Path(os.path.realpath(root / "current", strict=True))
    except OSError:
        return None
