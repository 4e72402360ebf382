"""MANIFEST.sha256: one `<sha256>  <path>` line per file, sorted by path (`sha256sum -c` reads
it). The release digest is the sha256 of the manifest's bytes and the release id is its first
16 hex digits, so the same content always gives the same id."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from plan_build.release import ID_LENGTH, MANIFEST, invalid

LINE_RE = re.compile(r"([0-9a-f]{64})  (.+)")
# Bundle paths stay boring on purpose: no spaces, quotes, backslashes or newlines, which
# `sha256sum` would escape and shells would mangle.
SAFE_PART_RE = re.compile(r"[A-Za-z0-9_.+-]+")
DIGEST_RE = re.compile(r"(?:sha256:)?([0-9a-fA-F]{64})")
CHUNK = 1 << 20


@dataclass(frozen=True)
class Manifest:
    entries: tuple[tuple[str, str], ...]  # (relative path, sha256), sorted by path
    text: str

    @property
    def digest(self) -> str:
        return digest_of(self.text)

    @property
    def id(self) -> str:
        return self.digest[:ID_LENGTH]

    @property
    def paths(self) -> set[str]:
        return {path for path, _ in self.entries}


def digest_of(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def parse_digest(value: str) -> str | None:
    """A pinned digest as 64 lowercase hex digits (`sha256:` prefix allowed), else None."""
    match = DIGEST_RE.fullmatch(value.strip())
    return match.group(1).lower() if match else None


def hash_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def check_relpath(rel: str, where: str) -> None:
    """Reject absolute paths, `..`, empty parts and characters a manifest cannot carry."""
    if rel.startswith("/") or rel.startswith("\\"):
        raise invalid(f"{where} contains an absolute path: {rel!r}", "rebuild the bundle")
    parts = rel.split("/")
    if ".." in parts:
        raise invalid(f"{where} contains a path leaving the bundle: {rel!r}", "rebuild the bundle")
    for part in parts:
        if part in ("", ".") or not SAFE_PART_RE.fullmatch(part):
            raise invalid(
                f"{where} contains an unusable file name: {rel!r}",
                "bundle file names may use only letters, digits and . _ + -",
            )


def render(entries: Iterable[tuple[str, str]]) -> str:
    return "".join(f"{sha}  {path}\n" for path, sha in sorted(entries))


def build(root: Path, paths: Iterable[str]) -> Manifest:
    entries = tuple(sorted((rel, hash_file(root / rel)) for rel in paths))
    return Manifest(entries, render(entries))


def parse(text: str, where: str) -> Manifest:
    if not text.endswith("\n"):
        raise invalid(f"{where}/{MANIFEST} is truncated (no final newline)", "rebuild the bundle")
    entries: list[tuple[str, str]] = []
    for number, line in enumerate(text.splitlines(), 1):
        match = LINE_RE.fullmatch(line)
        if not match:
            raise invalid(
                f"{where}/{MANIFEST} line {number} is not '<sha256>  <path>': {line[:80]!r}",
                "rebuild the bundle",
            )
        sha, rel = match.groups()
        check_relpath(rel, f"{where}/{MANIFEST}")
        if rel == MANIFEST:
            raise invalid(f"{where}/{MANIFEST} lists itself", "rebuild the bundle")
        entries.append((rel, sha))
    if not entries:
        raise invalid(f"{where}/{MANIFEST} lists no files", "rebuild the bundle")
    paths = [rel for rel, _ in entries]
    if len(set(paths)) != len(paths):
        raise invalid(f"{where}/{MANIFEST} lists a file twice", "rebuild the bundle")
    manifest = Manifest(tuple(entries), text)
    if render(entries) != text:
        # The digest names the release, so one content must have exactly one manifest text.
        raise invalid(
            f"{where}/{MANIFEST} is not in canonical form (paths sorted, one line each)",
            "rebuild the bundle with plan-build release.build",
        )
    return manifest


def mismatches(root: Path, manifest: Manifest) -> list[str]:
    """Paths whose content differs from the manifest (or that cannot be read)."""
    bad = []
    for rel, sha in manifest.entries:
        try:
            actual = hash_file(root / rel)
        except OSError:
            bad.append(rel)
            continue
        if actual != sha:
            bad.append(rel)
    return bad
