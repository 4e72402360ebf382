"""The installed distributions a release bundles, and the files each one contributes.

`release.build` ships plan-build's run-time dependency closure as found in the building
Python (checked against pyproject's pins), pure Python only: native extensions, bytecode and
install-time metadata are left out, and each file may come from one distribution only.
"""

from __future__ import annotations

import re
import sys
from importlib import metadata
from pathlib import Path

from plan_build.release import unavailable

NATIVE_SUFFIXES = (".so", ".pyd", ".dylib", ".dll")
SKIPPED_SUFFIXES = (*NATIVE_SUFFIXES, ".pyc", ".pyo", ".pth", ".exe")
SKIPPED_METADATA = {"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"}
NativeDist = tuple[list[str], list[str]]  # (top-level modules, metadata files)


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_name(requirement: str) -> str:
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    return match.group(1) if match else requirement.strip()


def closure(requirements: list[str]) -> list[metadata.Distribution]:
    """The installed distributions plan-build needs at run time (extras left out)."""
    pins = {}
    for requirement in requirements:
        match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([^\s;,]+)", requirement)
        if match:
            pins[_normal(match.group(1))] = match.group(2)
    seen: dict[str, metadata.Distribution] = {}
    queue = list(requirements)
    while queue:
        requirement = queue.pop(0)
        marker = requirement.split(";", 1)[1] if ";" in requirement else ""
        if "extra" in marker:
            continue
        name = _normal(_requirement_name(requirement))
        if name in seen or name == "plan-build":
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            if marker:
                continue  # a dependency for another platform or Python
            raise unavailable(
                f"cannot build a release: {name} is not installed in this Python "
                f"({sys.executable})",
                "install plan-build's dependencies first: pip install -e <checkout>",
            ) from None
        pinned = pins.get(name)
        if pinned and dist.version != pinned:
            raise unavailable(
                f"cannot build a release: pyproject pins {name}=={pinned} but this Python has "
                f"{dist.version}",
                "reinstall the pinned dependencies: pip install -e <checkout>",
            )
        seen[name] = dist
        queue.extend(dist.requires or [])
    return [seen[name] for name in sorted(seen)]


def _dist_files(dist: metadata.Distribution) -> tuple[dict[str, Path], bool]:
    """Files of `dist` to bundle (relative name → path) and whether it had native code."""
    if dist.files is None:
        raise unavailable(
            f"cannot build a release: {dist.metadata['Name']} has no file list (RECORD)",
            f"reinstall it: pip install --force-reinstall {dist.metadata['Name']}",
        )
    chosen: dict[str, Path] = {}
    native = False
    for entry in dist.files:
        rel = entry.as_posix()
        parts = rel.split("/")
        if rel.endswith(NATIVE_SUFFIXES):
            native = True
        if (
            ".." in parts
            or "__pycache__" in parts
            or rel.endswith(SKIPPED_SUFFIXES)
            or parts[0].startswith(("_editable", "__editable__"))
            or (parts[0].endswith(".dist-info") and parts[-1] in SKIPPED_METADATA)
        ):
            continue
        chosen[rel] = Path(str(entry.locate()))
    return chosen, native


def _top_level(names: list[str]) -> list[str]:
    tops = set()
    for rel in names:
        head = rel.split("/", 1)[0]
        if head.endswith(".dist-info") or head.endswith(".data"):
            continue
        tops.add(head[:-3] if head.endswith(".py") and "/" not in rel else head)
    return sorted(tops)


def bundled_files(
    dists: list[metadata.Distribution],
) -> tuple[list[tuple[str, str]], list[NativeDist]]:
    """(relative name, path) of every file the distributions ship, and for each one with
    native code its top-level modules and metadata files (left out if those cannot load)."""
    owners: dict[str, str] = {}
    files: list[tuple[str, str]] = []
    native_dists: list[NativeDist] = []
    for dist in dists:
        name = str(dist.metadata["Name"])
        chosen, native = _dist_files(dist)
        for rel, path in chosen.items():
            if rel in owners:
                raise unavailable(
                    f"cannot build a release: {rel} comes from both {owners[rel]} and {name}"
                )
            owners[rel] = name
            files.append((rel, str(path)))
        if native:
            meta = [r for r in chosen if r.split("/", 1)[0].endswith(".dist-info")]
            native_dists.append((_top_level(list(chosen)), meta))
    return files, native_dists
