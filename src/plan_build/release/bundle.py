"""`release.build`: one self-contained bundle from a plan-build checkout.

The bundle holds `plan-build.pyz` (a zipapp of plan_build and its pure-Python dependencies,
with bytecode compiled for the building interpreter), the two workflow skills, the templates
and MANIFEST.sha256. Building the same checkout with the same interpreter and dependency
versions gives the same bytes, so the same release id.

Here: what the build reads from the checkout (skills, templates, version), the zipapp and the
archive. Which installed distributions ship, and their files, is `dependencies`.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import sys
import tarfile
import tempfile
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from plan_build.core import proc
from plan_build.release import (
    ARCHITECT,
    MANIFEST,
    PYZ,
    SKILL,
    TEMPLATES,
    dependencies,
    disk,
    invalid,
    manifest,
    unavailable,
)
from plan_build.release.validate import VERSION_RE, front_matter_error

PACKAGE = "plan_build"
COMPILE_TIMEOUT = 120.0

# The zipapp's entry point. It makes every later import read the release's own file (never a
# path through the moving `current` link), then binds this run to the release and runs it.
MAIN_PY = """\
# plan-build release entry point (written by `plan-build release.build`)
import os
import sys

_archive = os.path.dirname(os.path.abspath(__file__))
_real = os.path.realpath(_archive)
if _real != _archive and sys.path and os.path.abspath(sys.path[0]) == _archive:
    sys.path[0] = _real

from plan_build.main import run_release

run_release(_real)
"""

# Assembles the zipapp in a fresh interpreter (-S, fixed hash seed): the bytecode must not
# depend on what the building process happened to have imported, because marshal output does.
# It first imports the modules of distributions that ship native code from a stored zip (where
# native extensions cannot load); those that fail are left out of the zipapp.
ASSEMBLE_PY = """\
import importlib, importlib.util, json, marshal, os, sys, zipfile
spec = json.load(open(sys.argv[1], encoding="utf-8"))
sources = {}
for rel, path in spec["files"]:
    with open(path, "rb") as fh:
        sources[rel] = fh.read()
sources["__main__.py"] = spec["main"].encode("utf-8")
native = []
if spec["probe"]:
    with zipfile.ZipFile(spec["probe_zip"], "w") as probe:
        for rel in sorted(sources):
            probe.writestr(rel, sources[rel])
    sys.dont_write_bytecode = True
    sys.path.insert(0, spec["probe_zip"])
    for name in spec["probe"]:
        try:
            importlib.import_module(name)
        except Exception:
            native.append(name)
def top(rel):
    head = rel.split("/", 1)[0]
    return head[:-3] if "/" not in rel and head.endswith(".py") else head
keep = {rel: data for rel, data in sources.items() if top(rel) not in native}
for tops, meta in spec["metadata"]:
    if tops and all(t in native for t in tops):
        for rel in meta:
            keep.pop(rel, None)
header = importlib.util.MAGIC_NUMBER + (1).to_bytes(4, "little")  # unchecked hash-based pyc
for rel in sorted(keep):
    if rel.endswith(".py"):
        code = compile(keep[rel], rel, "exec", dont_inherit=True, optimize=0)
        keep[rel + "c"] = header + importlib.util.source_hash(keep[rel]) + marshal.dumps(code)
with open(spec["out"], "wb") as fh:
    fh.write(b"#!/usr/bin/env python3\\n")
    with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for rel in sorted(keep):
            info = zipfile.ZipInfo(rel, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o100644 << 16
            info.create_system = 3
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, keep[rel], compresslevel=6)
os.chmod(spec["out"], 0o755)
print(json.dumps({"native": sorted(native)}))
"""


@dataclass(frozen=True)
class Built:
    id: str
    digest: str
    version: str
    directory: Path
    archive: Path
    size: int
    pyz_size: int
    files: int
    not_bundled: tuple[str, ...] = field(default=())

    def as_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "digest": self.digest,
            "version": self.version,
            "directory": str(self.directory),
            "archive": str(self.archive),
            "size": self.size,
            "pyz_size": self.pyz_size,
            "files": self.files,
            "not_bundled": list(self.not_bundled),
        }


# ---------------------------------------------------------------------------------- checkout


def is_checkout(path: Path) -> bool:
    try:
        data = tomllib.loads((path / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return False
    return bool(data.get("project", {}).get("name") == "plan-build")


def find_checkout(cwd: Path, explicit: Path | None, fallback: Path | None) -> Path:
    """`--checkout`, else the plan-build checkout containing `cwd`, else `fallback`."""
    if explicit is not None:
        path = Path(os.path.abspath(explicit))
        if not is_checkout(path):
            raise unavailable(
                f"{path} is not a plan-build checkout (no pyproject.toml for plan-build)",
                "pass the directory that holds plan-build's pyproject.toml",
            )
        return path
    for candidate in (cwd, *cwd.parents):
        if is_checkout(candidate):
            return candidate
    if fallback is not None and is_checkout(fallback):
        return fallback
    raise unavailable(
        "release.build needs a plan-build source checkout",
        "run it inside one, or pass --checkout DIR",
    )


def package_version(package: Path) -> str:
    init = package / "__init__.py"
    try:
        match = VERSION_RE.search(init.read_text(encoding="utf-8"))
    except OSError:
        match = None
    if not match:
        raise unavailable(f"{init} does not define __version__", "restore src/plan_build")
    return match.group(1)


def check_checkout(checkout: Path) -> list[Path]:
    """The template files to ship; raises with every missing piece listed at once."""
    skills = checkout / "skills"
    missing = [f"skills/{n}" for n in (SKILL, ARCHITECT) if not (skills / n).is_file()]
    if missing:
        raise unavailable(
            f"cannot build a release from {checkout}: {' and '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} missing",
            "add the standard (skills/SKILL.md) and architect (skills/ARCHITECT.md) workflow "
            "skills to the checkout, then rerun",
        )
    for name in (SKILL, ARCHITECT):
        path = skills / name
        text = path.read_text(encoding="utf-8", errors="replace")
        if not text.strip():
            raise unavailable(f"cannot build a release: skills/{name} is empty", "write the skill")
        problem = front_matter_error(text)
        if problem:
            raise unavailable(
                f"cannot build a release: skills/{name} {problem}",
                "start the skill with ---, a 'name:' and a 'description:' line, then ---",
            )
    templates = checkout / TEMPLATES
    found = sorted(_plain_files(templates, checkout)) if templates.is_dir() else []
    if not found:
        raise unavailable(
            f"cannot build a release: {templates} has no templates", "restore templates/"
        )
    empty = [p.relative_to(checkout).as_posix() for p in found if p.stat().st_size == 0]
    if empty:
        raise unavailable(
            f"cannot build a release: empty template files: {', '.join(empty)}",
            "remove them or give them content",
        )
    return found


def _plain_files(top: Path, checkout: Path) -> Iterator[Path]:
    """Regular, non-hidden files under `top`; a symbolic link is an error, not followed."""
    for current, dirs, files in os.walk(top, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
        for name in sorted(dirs + files):
            path = Path(current) / name
            if path.is_symlink():
                raise unavailable(
                    f"cannot build a release: {path.relative_to(checkout)} is a symbolic link",
                    "replace it with the file it points to",
                )
        for name in sorted(files):
            if not name.startswith("."):
                yield Path(current) / name


# ----------------------------------------------------------------------------------- build


@dataclass(frozen=True)
class Tree:
    """What a build reads: `base` holds skills/ and templates/, `package` is plan_build's
    source directory, `requirements` its run-time dependencies (pyproject or wheel metadata)."""

    base: Path
    package: Path
    requirements: list[str]
    skip: frozenset[str] = frozenset()  # top-level entries of `package` not shipped


def build(checkout: Path, out: Path, *, python: str = sys.executable) -> Built:
    checkout = Path(os.path.abspath(checkout))
    try:
        project = tomllib.loads((checkout / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise unavailable(f"cannot read {checkout}/pyproject.toml: {exc}") from None
    requirements = list(project.get("project", {}).get("dependencies", []))
    return build_tree(Tree(checkout, checkout / "src" / PACKAGE, requirements), out, python=python)


def build_tree(tree: Tree, out: Path, *, python: str = sys.executable) -> Built:
    from plan_build.core.resources import PACKAGE_DIR
    from plan_build.core.runrelease import running_bundle

    if running_bundle(PACKAGE_DIR) is not None:
        raise unavailable(
            "release.build needs the checkout's own Python environment, not a release",
            "in the checkout run: inv release.build (or .venv/bin/plan-build release.build)",
        )
    out = Path(os.path.abspath(out))
    templates = check_checkout(tree.base)
    version = package_version(tree.package)
    dists = dependencies.closure(tree.requirements)
    try:
        out.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=".build-", dir=out))
    except OSError as exc:
        raise unavailable(f"cannot write to {out}: {exc.strerror}", "pass --out DIR") from None
    try:
        return _build_in(
            work,
            tree=tree,
            out=out,
            version=version,
            templates=templates,
            dists=dists,
            python=python,
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _build_in(
    work: Path,
    *,
    tree: Tree,
    out: Path,
    version: str,
    templates: list[Path],
    dists: list[metadata.Distribution],
    python: str,
) -> Built:
    files, native_dists = dependencies.bundled_files(dists)
    source, checkout = tree.package, tree.base
    for current, dirs, names in os.walk(source):
        top = current == str(source)
        dirs[:] = sorted(
            d
            for d in dirs
            if d != "__pycache__" and not d.startswith(".") and not (top and d in tree.skip)
        )
        for name in sorted(names):
            if name.startswith(".") or name.endswith((".pyc", ".pyo")):
                continue
            path = Path(current) / name
            files.append((f"{PACKAGE}/{path.relative_to(source).as_posix()}", str(path)))

    bundle = work / "bundle"
    bundle.mkdir()
    probe = sorted({top for tops, _ in native_dists for top in tops})
    not_bundled = _assemble(
        work, bundle / PYZ, files=files, probe=probe, native_dists=native_dists, python=python
    )
    shutil.copyfile(checkout / "skills" / SKILL, bundle / SKILL)
    shutil.copyfile(checkout / "skills" / ARCHITECT, bundle / ARCHITECT)
    for path in templates:
        target = bundle / path.relative_to(checkout)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    shipped = sorted(p.relative_to(bundle).as_posix() for p in bundle.rglob("*") if p.is_file())
    for rel in shipped:
        manifest.check_relpath(rel, "the bundle")
    listed = manifest.build(bundle, shipped)
    (bundle / MANIFEST).write_text(listed.text, encoding="utf-8")
    size = sum((bundle / rel).stat().st_size for rel in [*shipped, MANIFEST])

    directory = out / f"plan-build-{listed.id}"
    archive = out / f"plan-build-{listed.id}.tar.gz"
    disk.remove_tree(directory)
    os.rename(bundle, directory)
    _write_archive(directory, [*shipped, MANIFEST], archive)
    return Built(
        id=listed.id,
        digest=listed.digest,
        version=version,
        directory=directory,
        archive=archive,
        size=size,
        pyz_size=(directory / PYZ).stat().st_size,
        files=len(shipped) + 1,
        not_bundled=tuple(not_bundled),
    )


def _assemble(
    work: Path,
    target: Path,
    *,
    files: list[tuple[str, str]],
    probe: list[str],
    native_dists: list[dependencies.NativeDist],
    python: str,
) -> list[str]:
    """Write the zipapp; return the modules left out because they need native code."""
    spec = work / "assemble.json"
    data = {
        "files": sorted(files),
        "main": MAIN_PY,
        "probe": probe,
        "probe_zip": str(work / "probe.zip"),
        "metadata": native_dists,
        "out": str(target),
    }
    spec.write_text(json.dumps(data), encoding="utf-8")
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONHASHSEED": "0", "LC_ALL": "C.UTF-8"}
    result = proc.run(
        [python, "-S", "-s", "-c", ASSEMBLE_PY, str(spec)],
        cwd=work,
        env=env,
        timeout=COMPILE_TIMEOUT,
    )
    if not result.ok:
        tail = "; ".join(result.stderr.strip().splitlines()[-3:])
        raise invalid(f"cannot assemble the zipapp: {tail}", "fix the source and rebuild")
    native: list[str] = json.loads(result.stdout.strip().splitlines()[-1])["native"]
    return native


def _write_archive(directory: Path, files: list[str], target: Path) -> None:
    """A reproducible tar.gz of the bundle under one top directory named like the bundle."""
    tmp = target.with_name(f".{target.name}.tmp")
    with (
        tmp.open("wb") as raw,
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as zipped,
        tarfile.open(fileobj=zipped, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        for rel in sorted(files):
            data = (directory / rel).read_bytes()
            info = tarfile.TarInfo(f"{directory.name}/{rel}")
            info.size = len(data)
            info.mode = 0o644
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))
    os.replace(tmp, target)
