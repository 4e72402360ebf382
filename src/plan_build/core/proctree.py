"""This process's ancestors, and what each of them is.

One home for the process-tree facts two features need: session resolution (which ancestor is
the Claude Code session, claudesessions.py) and the approval gates (is any ancestor an agent,
interact.py). Start times come from /proc where it exists, so a reused pid is never taken for
the process that had it before; where there is none (macOS, or /proc hidden) the same facts
come from psutil, which costs an import but gives the same answer (docs/portability.md).
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

MAX_DEPTH = 64
# Interpreters whose first argument is the program that really runs (`node …/codex.js`,
# `python …/claude` for a script with a shebang).
INTERPRETERS = re.compile(r"^(node|nodejs|bun|deno|python[0-9.]*)$")
SUFFIXES = (".exe", ".js", ".mjs", ".cjs")
PROC = Path("/proc")  # the procfs this module reads; tests point it elsewhere to hide it


@dataclass(frozen=True)
class Ancestor:
    pid: int
    names: tuple[str, ...]  # what it calls itself: comm, executable, argv[0] (and argv[1])


def procfs() -> bool:
    """Whether /proc is there to read (Linux); False on macOS and where it is hidden."""
    return (PROC / "self" / "stat").exists()


def supervision_gap() -> str | None:
    """Why the supervisor's hold on a command's tree is weaker here than on Linux, in words for
    preflight; None where it has /proc and a child subreaper (docs/portability.md)."""
    if not sys.platform.startswith("linux"):
        return "this system has no child subreaper"
    if not procfs():
        return "/proc is not readable"
    import ctypes

    flag = ctypes.c_int(0)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(37, ctypes.byref(flag), 0, 0, 0) != 0:  # PR_GET_CHILD_SUBREAPER: asks only
        return "the child subreaper is refused here"
    return None


def process_start(pid: int) -> str | None:
    """The process start time as Linux records it (clock ticks since boot), which is what
    Claude Code writes as `procStart`; None when the process is gone, and on systems whose
    kernel has no such clock (macOS: callers compare `create_time` instead)."""
    fields = _stat_fields(pid)
    if fields is not None:
        return fields[19] if len(fields) > 19 else None
    if procfs() or not sys.platform.startswith("linux"):
        return None
    return _ticks_from_psutil(pid)


def _ticks_from_psutil(pid: int) -> str | None:
    """Linux's clock-tick start time without reading /proc ourselves: psutil's create time is
    boot time plus ticks / CLK_TCK, so the ticks come back exactly by rounding."""
    import psutil

    try:
        began = psutil.Process(pid).create_time()
        boot = psutil.boot_time()
    except (psutil.Error, OSError):
        return None
    return str(round((began - boot) * os.sysconf("SC_CLK_TCK")))


def create_time(pid: int) -> float | None:
    """When process `pid` started, in seconds since the epoch; None when it is gone.

    From /proc (boot time plus the start in clock ticks, as psutil computes it) where there is
    one, so temp-file owner tags and lock checks do not import psutil; else from psutil (None
    without it). The one answer to "when did this process start" (`proc` asks it too)."""
    fields = _stat_fields(pid)
    boot = _boot_time()
    if fields is not None and len(fields) > 19 and boot is not None:
        return boot + int(fields[19]) / os.sysconf("SC_CLK_TCK")
    if procfs():
        return None  # /proc works: the process is gone
    try:
        import psutil
    except ImportError:  # a release zipapp on a Python without psutil
        return None
    try:
        return float(psutil.Process(pid).create_time())
    except (psutil.Error, OSError):
        return None


def zombie(pid: int) -> bool:
    """Whether `pid` has exited and waits for its parent to reap it (False when gone)."""
    fields = _stat_fields(pid)
    if fields is not None:
        return fields[:1] == ["Z"]
    if procfs():
        return False
    try:
        import psutil
    except ImportError:  # a release zipapp on a Python without psutil
        return False
    try:
        return bool(psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


_BOOT: list[float] = []


def _boot_time() -> float | None:
    if not _BOOT:
        try:
            for line in (PROC / "stat").read_text().splitlines():
                if line.startswith("btime "):
                    _BOOT.append(float(line.split()[1]))
                    break
        except (OSError, ValueError):
            return None
    return _BOOT[0] if _BOOT else None


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _stat_fields(pid: int) -> list[str] | None:
    """/proc/PID/stat after the command name (which may hold spaces and parentheses)."""
    try:
        stat = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[-1].split()


def ancestors() -> list[int]:
    """This process's parent, grandparent, ... (nearest first), up to MAX_DEPTH.

    Read from /proc where there is one (psutil costs a read-only command ~30 ms to import)."""
    fields = _stat_fields(os.getpid())
    if fields is not None and len(fields) > 1:
        chain: list[int] = []
        pid = int(fields[1])
        while pid > 1 and len(chain) < MAX_DEPTH:
            chain.append(pid)
            parent = _stat_fields(pid)
            if parent is None or len(parent) < 2:
                break
            pid = int(parent[1])
        return chain
    import psutil

    chain = []
    try:
        proc = psutil.Process(os.getpid()).parent()
        while proc is not None and proc.pid > 1 and len(chain) < MAX_DEPTH:
            chain.append(proc.pid)
            proc = proc.parent()
    except psutil.Error:
        pass
    return chain


def _base(word: str) -> str:
    name = os.path.basename(word).lower()
    for suffix in SUFFIXES:
        name = name.removesuffix(suffix)
    return name


def describe(pid: int) -> Ancestor:
    """The names a process goes by; an unreadable one has none (it is not trusted either way)."""
    import psutil

    names: list[str] = []
    try:
        proc = psutil.Process(pid)
        with proc.oneshot():
            for get in (proc.name, proc.exe):
                with contextlib.suppress(psutil.Error, OSError):
                    names.append(_base(get()))
            try:
                argv = proc.cmdline()
            except (psutil.Error, OSError):
                argv = []
    except psutil.Error:
        return Ancestor(pid, ())
    if argv:
        first = _base(argv[0].split(" ", 1)[0])
        names.append(first)
        if INTERPRETERS.match(first):
            script = next((a for a in argv[1:] if not a.startswith("-")), "")
            if script:
                names.append(_base(script))
    return Ancestor(pid, tuple(dict.fromkeys(n for n in names if n)))


__all__ = [
    "MAX_DEPTH",
    "Ancestor",
    "ancestors",
    "create_time",
    "describe",
    "pid_alive",
    "process_start",
    "procfs",
    "supervision_gap",
    "zombie",
]
