"""Atomic file replacement: temp file in the same directory, fsync, rename, fsync the directory.

A crash or Ctrl-C leaves either the old file or the new one, never half of either.

Temp files and directories carry their owner (`~pb<pid>-<start time>~` in the name), so a run
killed with SIGKILL leaves debris the next run can prove dead and remove (`sweep`).

JSON state files are read through `read_json` (one bound on size and nesting, one error type,
StateFileError, naming the file) and written through `write_json` (atomic, strict JSON).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from plan_build.core.errors import ExitCode, PlanBuildError

MAX_JSON_BYTES = 32 * 1024 * 1024
MAX_JSON_DEPTH = 64


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: str | bytes, *, mode: int | None = None) -> None:
    payload = data.encode("utf-8") if isinstance(data, str) else data
    path.parent.mkdir(parents=True, exist_ok=True)
    if mode is None:
        try:
            mode = path.stat().st_mode & 0o7777
        except FileNotFoundError:
            mode = 0o666 & ~_umask()
    sweep(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}{owner_tag()}", suffix=".tmp", dir=path.parent)
    _fill_and_rename(fd, payload, Path(tmp), path, mode)


def _fill_and_rename(fd: int, data: bytes, tmp: Path, path: Path, mode: int | None) -> None:
    """Write `data` through `fd` (open on `tmp`), flush it to disk, rename `tmp` over `path`
    and flush the directory; `tmp` is removed if any step fails."""
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)


def file_mode(executable: bool) -> int:
    """The mode git gives a file it writes: 0777 or 0666, less the umask."""
    return (0o777 if executable else 0o666) & ~_umask()


def atomic_symlink(path: Path, target: str) -> None:
    """Make `path` a symbolic link to `target`, replacing whatever entry is there (a file or
    a link, never followed) in one rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}{owner_tag()}{os.urandom(4).hex()}.tmp"
    os.symlink(target, tmp)
    try:
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)


def replace_locked(path: Path, data: bytes) -> None:
    """Replace `path` the way git replaces its own files (the index): write `<path>.lock`,
    created exclusively so a git process holding it makes this refuse, then rename it over."""
    lock = path.with_name(path.name + ".lock")
    try:
        fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        raise PlanBuildError(
            f"{lock} exists: another git process is writing it",
            f"wait for that git command to finish (or, if none runs, remove {lock}), then retry",
            code=ExitCode.BLOCKED,
        ) from None
    _fill_and_rename(fd, data, lock, path, None)


_OWNED = re.compile(r"~pb(\d+)-(\d+)~")
_TAG: list[str] = []


def _started(pid: int) -> int | None:
    """When process `pid` started (whole seconds since the epoch); None if unknown."""
    from plan_build.core.proctree import create_time

    try:
        began = create_time(pid)
    except ImportError:  # a release zipapp on a Python without psutil
        return None
    return int(began) if began is not None else None


def owner_tag() -> str:
    """This process as part of a temp name: `~pb<pid>-<start time>~`."""
    if not _TAG or not _TAG[0].startswith(f"~pb{os.getpid()}-"):  # a fork is another owner
        _TAG[:] = [f"~pb{os.getpid()}-{_started(os.getpid()) or 0}~"]
    return _TAG[0]


def owner_gone(pid: int, started: int) -> bool:
    """The owner of a tagged temp name is gone: the one pid-reuse rule (locks.owner_alive),
    with the tag's whole-second start time (0: unknown, the pid alone decides)."""
    from plan_build.core.locks import owner_alive

    return pid != os.getpid() and not owner_alive(pid, float(started) if started else None)


def sweep(directory: Path, prefix: str = "") -> list[Path]:
    """Remove the temp files and directories in `directory` (names starting with `prefix`)
    whose owner is gone; what anyone else named, or a live run owns, is never touched."""
    removed: list[Path] = []
    try:
        names = [n for n in os.listdir(directory) if n.startswith(prefix) and "~pb" in n]
    except OSError:
        return removed
    for name in names:
        m = _OWNED.search(name)
        if m is None or not owner_gone(int(m.group(1)), int(m.group(2))):
            continue
        path = directory / name
        with contextlib.suppress(OSError):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
            removed.append(path)
    return removed


@contextlib.contextmanager
def owned_tempdir(prefix: str, directory: Path | None = None) -> Iterator[Path]:
    """A temp directory named with its owner, removed afterwards; a dead run's ones with the
    same prefix are swept first."""
    base = Path(directory) if directory is not None else Path(tempfile.gettempdir())
    sweep(base, prefix)
    tmp = Path(tempfile.mkdtemp(prefix=f"{prefix}{owner_tag()}", dir=base))
    try:
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


@dataclass(frozen=True)
class NameRules:
    """When two spellings of a path name one file, as git recorded it for the repository's
    file system at `git init`: `core.ignorecase` (macOS and Windows drives fold case) and
    `core.precomposeunicode` (macOS: an NFD name and its NFC form are one file). On Linux
    both are off and names compare byte for byte."""

    ignorecase: bool = False
    precompose: bool = False

    def key(self, name: str) -> str:
        """`name` in the one spelling these rules compare by."""
        if self.precompose:
            import unicodedata

            name = unicodedata.normalize("NFC", name)
        return name.casefold() if self.ignorecase else name


BYTEWISE = NameRules()  # Linux: every spelling is its own name
# what may alias .git on some file system: refusing a link into it errs on the safe side
FOLD_ALL = NameRules(ignorecase=True, precompose=True)


def _within(path: Path, top: Path, names: NameRules = BYTEWISE) -> bool:
    if names == BYTEWISE:
        return path == top or top in path.parents
    key = names.key(str(top))
    return any(names.key(str(p)) == key for p in (path, *path.parents))


def confine(
    path: Path, root: Path, *, forbid: Path | None = None, names: NameRules = BYTEWISE
) -> Path:
    """`path`, once no part of it between `root` and its end is a symbolic link leading out of
    `root` (or into `forbid`, the repository's .git); else refuse, naming the link.

    A repository's content (a committed `.claude -> /elsewhere`) must never steer where
    plan-build writes or which other project's files it reads. Links that stay inside are
    followed. Raises PlanBuildError (exit 6) before anything is written. `names` says when two
    spellings are one path (macOS: `.GIT` is `.git`); a link into `forbid` is refused in any
    spelling that could alias it.
    """
    from plan_build.core.errors import ExitCode, PlanBuildError

    top = root.resolve()
    banned = forbid.resolve() if forbid is not None else None
    absolute = path if path.is_absolute() else root / path
    try:
        parts = absolute.relative_to(root).parts
    except ValueError:
        try:
            parts = absolute.resolve().relative_to(top).parts
        except ValueError:
            parts = ()
        if not parts and absolute.resolve() != top:
            raise PlanBuildError(
                f"{path} is outside {root}; plan-build writes only inside it",
                "run plan-build from inside the repository it acts on",
                code=ExitCode.BLOCKED,
            ) from None
        absolute = top.joinpath(*parts)
        root = top
    current = root
    for part in parts:
        current = current / part
        if not current.is_symlink():
            continue
        target = current.resolve()
        if not _within(target, top, names):
            where = "outside the repository"
        elif banned is not None and _within(target, banned, FOLD_ALL):
            where = "into the repository's .git"
        else:
            continue
        raise PlanBuildError(
            f"{current} is a symbolic link to {target}, {where}; plan-build does not write "
            "or read through it",
            f"remove the link (or replace it with a real directory): rm {current}",
            code=ExitCode.BLOCKED,
        )
    return absolute


class StateFileError(PlanBuildError):
    """A state file cannot be used: unreadable, not UTF-8, not JSON, too large or nested too
    deep (or, raised by the file's owner, not the expected shape). Callers that can go on
    without the file (a listing skipping one review folder) catch this type."""

    def __init__(
        self,
        path: Path,
        why: str,
        fix: str | None = None,
        *,
        code: ExitCode = ExitCode.BLOCKED,
        what: str | None = None,
    ) -> None:
        super().__init__(
            what or f"{path} cannot be used: {why}",
            fix or f"move it aside (mv '{path}' '{path}.broken') and run the command again",
            code=code,
        )
        self.path = path
        self.why = why


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _depth(value: Any) -> int:
    """How deeply containers nest in `value` (iterative: no recursion on hostile input)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict | list):
            deepest = max(deepest, level)
            if level > MAX_JSON_DEPTH:
                break
            children = node.values() if isinstance(node, dict) else node
            stack.extend((child, level + 1) for child in children)
    return deepest


_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def too_deep_at(text: str, limit: int = MAX_JSON_DEPTH) -> int | None:
    """The offset where `text`'s brackets first nest deeper than `limit` (strings skipped), or
    None: checked before parsing so a 100,000-deep document never reaches the recursive parser."""
    depth = 0
    for match in _JSON_TOKENS.finditer(text):
        tok = match.group()
        if tok in "[{":
            depth += 1
            if depth > limit:
                return match.start()
        elif tok in "]}":
            depth -= 1
    return None


def loads_json(text: str, path: Path, fix: str | None = None) -> Any:
    """`text` (the content of `path`) as strict JSON, nested at most MAX_JSON_DEPTH deep."""
    deep = too_deep_at(text)
    if deep is not None:
        why = f"nested deeper than {MAX_JSON_DEPTH} levels (at character {deep})"
        raise StateFileError(path, why, fix)
    try:
        data = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise StateFileError(path, f"nested deeper than {MAX_JSON_DEPTH} levels", fix) from None
    except ValueError as exc:  # JSONDecodeError included
        raise StateFileError(path, f"not JSON ({exc})", fix) from exc
    if _depth(data) > MAX_JSON_DEPTH:
        raise StateFileError(path, f"nested deeper than {MAX_JSON_DEPTH} levels", fix)
    return data


def read_json(path: Path, fix: str | None = None, *, max_bytes: int = MAX_JSON_BYTES) -> Any:
    """The JSON in `path`. A missing file raises FileNotFoundError (each caller decides what
    that means); anything else wrong raises StateFileError naming the file and `fix`."""
    try:
        with path.open("rb") as fh:
            raw = fh.read(max_bytes + 1)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise StateFileError(path, f"it cannot be read ({exc.strerror or exc})", fix) from exc
    if len(raw) > max_bytes:
        raise StateFileError(path, f"it is larger than {max_bytes // (1024 * 1024)} MiB", fix)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise StateFileError(path, f"it is not UTF-8 (byte {exc.start})", fix) from exc
    return loads_json(text, path, fix)


def write_json(
    path: Path,
    data: Any,
    *,
    indent: int | None = 2,
    sort_keys: bool = False,
    mode: int | None = None,
) -> None:
    """Write `data` as strict JSON (no NaN) atomically, ending with a newline."""
    text = json.dumps(data, indent=indent, sort_keys=sort_keys, allow_nan=False)
    atomic_write(path, text + "\n", mode=mode)
