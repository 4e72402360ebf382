"""Everything a bundle must pass before it can become a release: required files present and
non-empty, no links or special files, the manifest matching every byte, skills with valid front
matter, templates that parse, and a zipapp that compiles and answers `--version`."""

from __future__ import annotations

import importlib.util
import marshal
import os
import re
import stat
import sys
import types
import zipfile
from dataclasses import dataclass
from pathlib import Path

from plan_build.core import proc, sessionvars
from plan_build.release import (
    ARCHITECT,
    MANIFEST,
    PYZ,
    REQUIRED,
    SKILL,
    TEMPLATES,
    invalid,
    limits,
    manifest,
)

VERSION_RE = re.compile(r"""^__version__\s*=\s*["']([^"']+)["']""", re.MULTILINE)
RUN_TIMEOUT = 60.0


@dataclass(frozen=True)
class Checked:
    manifest: manifest.Manifest
    version: str
    size: int  # bytes of all files, manifest included
    files: int


def list_files(bundle: Path, where: str) -> list[str]:
    """Every regular file under `bundle` as a relative path; links and special files are refused."""
    found: list[str] = []
    for top, dirs, files in os.walk(bundle, followlinks=False):
        for name in sorted(dirs + files):
            path = Path(top) / name
            rel = path.relative_to(bundle).as_posix()
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode):
                raise invalid(
                    f"{where} contains a symbolic link: {rel}",
                    "bundles carry plain files only; rebuild it with plan-build release.build",
                )
            if stat.S_ISDIR(mode):
                continue
            if not stat.S_ISREG(mode):
                raise invalid(f"{where} contains a special file: {rel}", "rebuild the bundle")
            manifest.check_relpath(rel, where)
            found.append(rel)
    return sorted(found)


def front_matter_error(text: str) -> str | None:
    """Why a skill's front matter is unusable, or None when it has a name and a description."""
    import yaml

    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return "does not start with a '---' front matter block"
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        return "has no closing '---' after its front matter"
    try:
        data = yaml.safe_load("\n".join(lines[1:end]))
    except yaml.YAMLError as exc:
        return f"has front matter that is not valid YAML ({str(exc).splitlines()[0]})"
    except RecursionError:  # PyYAML composes nested collections recursively
        return "has front matter nested too deeply"
    if not isinstance(data, dict):
        return "has front matter that is not a mapping"
    for key in ("name", "description"):
        value = data.get(key)
        if not isinstance(value, str) or not value.strip():
            return f"has no '{key}' in its front matter"
    return None


def check_skill(path: Path, label: str) -> None:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise invalid(f"{label} is not UTF-8 text", "fix the skill file") from None
    problem = front_matter_error(text)
    if problem:
        raise invalid(
            f"{label} {problem}",
            "start the skill with ---, a 'name:' and a 'description:' line, then ---",
        )


def check_templates(bundle: Path, files: list[str], where: str) -> None:
    from jinja2 import Environment, TemplateSyntaxError

    # Markdown prompts, not HTML: parsing only, nothing is rendered or escaped here.
    env = Environment(  # noqa: S701
        keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True
    )
    for rel in files:
        if not rel.startswith(f"{TEMPLATES}/"):
            continue
        try:
            text = (bundle / rel).read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise invalid(f"{where}: {rel} is not UTF-8 text", "fix the template") from None
        if rel.endswith(".j2"):
            try:
                env.parse(text)
            except TemplateSyntaxError as exc:
                raise invalid(
                    f"{where}: {rel} line {exc.lineno} is not a valid template: {exc.message}",
                    "fix the template and rebuild",
                ) from None
            except RecursionError:  # Jinja's parser recurses once per nesting level
                raise invalid(
                    f"{where}: {rel} is nested too deeply to parse", "fix the template and rebuild"
                ) from None


def pyz_version(pyz: Path) -> str | None:
    """The `__version__` inside a zipapp, without running it."""
    try:
        with zipfile.ZipFile(pyz) as archive:
            text = archive.read("plan_build/__init__.py").decode("utf-8")
    except (OSError, KeyError, zipfile.BadZipFile, UnicodeDecodeError):
        return None
    match = VERSION_RE.search(text)
    return match.group(1) if match else None


def check_pyz(pyz: Path, where: str) -> str:
    """The zipapp is a sound zip whose every module compiles; returns its version."""
    try:
        limits.check_zip_directory(pyz, where)
        with zipfile.ZipFile(pyz) as archive:
            limits.check_zip_entries(archive.infolist(), pyz, where)
            names = archive.namelist()
            if "__main__.py" not in names or "plan_build/__init__.py" not in names:
                raise invalid(f"{where}: {PYZ} is not a plan-build zipapp", "rebuild the bundle")
            present = set(names)
            for name in names:
                if not name.endswith(".py"):
                    continue
                source = archive.read(name)
                pyc = archive.read(name + "c") if name + "c" in present else None
                if _bytecode_matches(source, pyc):
                    continue
                try:
                    compile(source, f"{PYZ}/{name}", "exec", dont_inherit=True)
                except (SyntaxError, ValueError) as exc:
                    raise invalid(
                        f"{where}: {PYZ}/{name} does not compile: {exc}", "rebuild the bundle"
                    ) from None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError) as exc:
        raise invalid(
            f"{where}: {PYZ} is not a readable zip ({exc})", "rebuild the bundle"
        ) from None
    version = pyz_version(pyz)
    if not version:
        raise invalid(f"{where}: {PYZ} carries no plan_build version", "rebuild the bundle")
    return version


def _bytecode_matches(source: bytes, pyc: bytes | None) -> bool:
    """True when `pyc` is loadable bytecode of exactly `source` for this interpreter: the
    source compiled when the bundle was built, so compiling it again proves nothing new."""
    if pyc is None or len(pyc) < 16 or pyc[:4] != importlib.util.MAGIC_NUMBER:
        return False
    if int.from_bytes(pyc[4:8], "little") & 1 == 0:  # not hash-based
        return False
    if pyc[8:16] != importlib.util.source_hash(source):
        return False
    try:
        # The manifest already vouched for these bytes, and --version executes them next.
        return isinstance(marshal.loads(pyc[16:]), types.CodeType)  # noqa: S302
    except (EOFError, ValueError, TypeError):
        return False


def check_runs(pyz: Path, version: str, where: str, python: str) -> None:
    """`python -S -E plan-build.pyz --version` prints `plan-build <version>`.

    -S and -E keep the interpreter's site-packages and PYTHON* variables out, so this proves
    the zipapp starts on its own bundled dependencies.
    """
    env = {k: v for k, v in os.environ.items() if k != sessionvars.RELEASE}
    result = proc.run(
        [python, "-S", "-E", str(pyz), "--version"], cwd=pyz.parent, env=env, timeout=RUN_TIMEOUT
    )
    expected = f"plan-build {version}"
    if not result.ok or result.stdout.strip() != expected:
        tail = (result.stderr.strip() or result.stdout.strip()).splitlines()[-3:]
        detail = "; ".join(tail) or f"exit {result.returncode}"
        raise invalid(
            f"{where}: {PYZ} --version did not print '{expected}' ({detail})",
            "rebuild the bundle with the same Python it will run on",
        )


def check_listed(raw: bytes, present: set[str], where: str, unlisted_fix: str) -> manifest.Manifest:
    """The manifest (`raw`) parsed, and the files `present` in the source exactly its list:
    an unlisted or a missing file is refused by name."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise invalid(f"{where}/{MANIFEST} is not text", "rebuild the bundle") from None
    listed = manifest.parse(text, where)
    unlisted = sorted(present - listed.paths - {MANIFEST})
    if unlisted:
        raise invalid(
            f"{where} has files its manifest does not list: {', '.join(unlisted)}", unlisted_fix
        )
    absent = sorted(listed.paths - present)
    if absent:
        raise invalid(
            f"{where} is missing files its manifest lists: {', '.join(absent)}",
            "download or build the bundle again",
        )
    return listed


def validate(bundle: Path, *, where: str | None = None, run: bool = True) -> Checked:
    """Check a bundle directory completely; raise PlanBuildError (exit 6) on the first problem."""
    label = where or str(bundle)
    files = list_files(bundle, label)
    present = set(files)
    missing = [name for name in REQUIRED if name not in present]
    if missing:
        raise invalid(f"{label} is incomplete: missing {', '.join(missing)}", "rebuild the bundle")
    sizes = {rel: (bundle / rel).stat().st_size for rel in files}
    empty = [rel for rel in files if sizes[rel] == 0]
    if empty:
        raise invalid(f"{label} has empty files: {', '.join(empty)}", "rebuild the bundle")
    if not any(rel.startswith(f"{TEMPLATES}/") for rel in files):
        raise invalid(f"{label} has no {TEMPLATES}/", "rebuild the bundle")
    listed = check_listed((bundle / MANIFEST).read_bytes(), present, label, "rebuild the bundle")
    bad = manifest.mismatches(bundle, listed)
    if bad:
        raise invalid(
            f"{label}: {', '.join(bad)} {'does' if len(bad) == 1 else 'do'} not match "
            f"{MANIFEST} (tampered or corrupted)",
            "rebuild or download the bundle again",
        )
    for name in (SKILL, ARCHITECT):
        check_skill(bundle / name, f"{label}/{name}")
    check_templates(bundle, files, label)
    version = check_pyz(bundle / PYZ, label)
    if run:
        check_runs(bundle / PYZ, version, label, sys.executable)
    return Checked(listed, version, sum(sizes.values()), len(files))
