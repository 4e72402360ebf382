"""The one place plan-build runs external commands.

Argument lists only (never a shell), a timeout on every call, stdin closed unless input is
meant, and the child's whole process tree killed on timeout or Ctrl-C. Unit tests that fake one
process's output use pytest-subprocess (it patches `subprocess.Popen`); flows, timeouts and
kills are tested with stub executables on PATH (docs/adr/0001).

Over 400 lines on purpose: this is the only module that may import `subprocess` (ruff's
banned-api rule), so starting, waiting, killing a tree, reaping a dead run's survivors and the
attached and detached children all live here; splitting them would hand the `Popen` objects
across modules. The supervisor program it starts is `plan_build.core.supervisor`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:  # loaded only to stop a process tree: read-only commands start faster
    import psutil

from plan_build.core import proctree, supervisor
from plan_build.core.errors import ExitCode, PlanBuildError

log = logging.getLogger("plan_build.core.proc")

DEFAULT_TIMEOUT = 30.0
KILL_GRACE = 2.0  # seconds between SIGTERM and SIGKILL when a command is stopped
CANCEL_POLL = 0.25  # how often a cancellable wait looks at its event


def kill_grace() -> float:
    """The SIGTERM-to-SIGKILL grace: KILL_GRACE, or PLAN_BUILD_KILL_GRACE when it is a number
    from 0.05 to 10. The test suite shortens it, so each test that stops a command which
    ignores SIGTERM does not wait the full 2 s."""
    try:
        value = float(os.environ.get("PLAN_BUILD_KILL_GRACE", KILL_GRACE))
    except ValueError:
        return KILL_GRACE
    return value if 0.05 <= value <= 10 else KILL_GRACE


@dataclass(frozen=True)
class Completed:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def ok(self) -> bool:
        return self.returncode == 0


class CommandNotFound(PlanBuildError):
    def __init__(self, name: str) -> None:
        super().__init__(
            f"{name} is not installed or not on PATH",
            f"install {name} or add its directory to PATH",
            code=ExitCode.PREFLIGHT,
        )
        self.name = name


class CommandTimeout(PlanBuildError):
    def __init__(self, argv: Sequence[str], timeout: float, stdout: str = "") -> None:
        super().__init__(
            f"{quote(argv)} did not finish within {timeout:g}s and was stopped",
            "check that the tool can reach its service, or raise the timeout",
            code=ExitCode.BLOCKED,
        )
        self.argv = tuple(argv)
        self.timeout = timeout
        self.stdout = stdout


class CommandCancelled(PlanBuildError):
    """Stopped on purpose by the caller (another part of the same run failed or was stopped)."""

    def __init__(self, argv: Sequence[str]) -> None:
        super().__init__(f"{quote(argv)} was stopped", None, code=ExitCode.INTERRUPTED)
        self.argv = tuple(argv)


class CommandFailed(PlanBuildError):
    def __init__(self, result: Completed) -> None:
        tail = (result.stderr.strip() or result.stdout.strip()).splitlines()[-3:]
        detail = ("\n    " + "\n    ".join(tail)) if tail else ""
        super().__init__(
            f"{quote(result.argv)} exited {result.returncode}{detail}",
            None,
            code=ExitCode.BLOCKED,
        )
        self.result = result


def quote(argv: Sequence[str]) -> str:
    """The command as a user could paste it into a shell."""
    return shlex.join(str(a) for a in argv)


def which(name: str, env: Mapping[str, str] | None = None) -> str | None:
    path = (env if env is not None else os.environ).get("PATH")
    return shutil.which(name, path=path)


def run(
    argv: Sequence[str | os.PathLike[str]],
    *,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    input: str | None = None,
    check: bool = False,
    heartbeat: Callable[[float], None] | None = None,
    heartbeat_every: float = 30.0,
    cancel: threading.Event | None = None,
    supervised: bool = False,
    on_start: Callable[[int], None] | None = None,
    stdout_file: Path | None = None,
    on_line: Callable[[str], None] | None = None,
    stderr_file: Path | None = None,
) -> Completed:
    """Run `argv` to completion and capture its output as text.

    Raises CommandNotFound when the program is missing, CommandTimeout when it outlives
    `timeout` (after killing its whole process tree) and CommandFailed for a non-zero exit
    when `check` is true. `heartbeat(elapsed)` is called every `heartbeat_every` seconds while
    the command runs, so long reviews can show they are alive. Setting `cancel` (from another
    thread) kills the command's tree and raises CommandCancelled. `supervised` runs the command
    under a small supervisor (`plan_build.core.supervisor`) so no process of its tree outlives this
    one, even after a SIGKILL; `on_start(pid)` gets the pid (= process group id) of the started
    child. With `stdout_file`, stdout goes to that file (created 0600, or emptied) as the
    command writes it, never into memory: `Completed.stdout` and a timeout's partial output
    are then empty, and the caller reads the file (Codex's event stream can be large).
    `on_line(line)` is told each line of stdout as it arrives (a wave's progress shows
    Codex's latest event); stdout is still returned whole, or, with `stdout_file` too, written
    to that file line by line as it is told. With `stderr_file`, stderr goes to that file the
    same way (`Completed.stderr` is then empty): the session broker's runs, which a client
    reads while they last.
    """
    args, code, out, err, seconds = _execute(
        argv,
        cwd=cwd,
        env=env,
        timeout=timeout,
        input=input,
        text=True,
        heartbeat=heartbeat,
        heartbeat_every=heartbeat_every,
        cancel=cancel,
        supervised=supervised,
        on_start=on_start,
        stdout_file=stdout_file,
        on_line=on_line,
        stderr_file=stderr_file,
    )
    result = Completed(tuple(args), code, out or "", err or "", seconds)
    log.debug("exit %s after %.3fs: %s", result.returncode, result.seconds, quote(args))
    if check and not result.ok:
        raise CommandFailed(result)
    return result


@dataclass(frozen=True)
class CompletedBytes:
    """Like Completed, for output that must stay exact bytes (git blob contents)."""

    argv: tuple[str, ...]
    returncode: int
    stdout: bytes
    stderr: str
    seconds: float

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def run_bytes(
    argv: Sequence[str | os.PathLike[str]],
    *,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    input: bytes | None = None,
    check: bool = False,
) -> CompletedBytes:
    """`run` for binary data: stdin and stdout are bytes, never decoded or newline-translated."""
    args, code, out, err, seconds = _execute(
        argv, cwd=cwd, env=env, timeout=timeout, input=input, text=False
    )
    result = CompletedBytes(
        tuple(args), code, out or b"", (err or b"").decode("utf-8", "replace"), seconds
    )
    if check and not result.ok:
        raise CommandFailed(
            Completed(result.argv, result.returncode, "", result.stderr, result.seconds)
        )
    return result


def head_bytes(
    argv: Sequence[str | os.PathLike[str]],
    *,
    limit: int,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> tuple[bytes, bool]:
    """The first `limit` bytes of a command's stdout, and whether that is all of it. The
    command is stopped as soon as it has given more (a report shows the start of a diff of
    thousands of files; git need not write the rest). Its stderr is discarded. Raises
    CommandFailed when it ends on its own with a non-zero exit, CommandTimeout after `timeout`.
    """
    args = [os.fspath(a) for a in argv]
    log.debug("run (first %d bytes): %s", limit, quote(args))
    started = time.monotonic()
    child = _start(args, cwd=cwd, env=env, has_input=False, text=False, stderr=subprocess.DEVNULL)
    expired = threading.Event()

    def stop() -> None:
        if child.pid > 0:  # (a faked process in tests has no real group)
            _signal_group(child.pid, signal.SIGKILL)

    def expire() -> None:
        expired.set()
        stop()

    timer = threading.Timer(timeout, expire)
    timer.start()
    try:
        out: Any = child.stdout  # a pipe: stdout is captured
        chunks: list[bytes] = []
        got = 0
        while got <= limit:
            chunk = out.read1(min(65536, limit + 1 - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        whole = got <= limit
        out.close()  # the command stops at its next write (SIGPIPE)
        if not whole:
            stop()
        code = child.wait()
    finally:
        timer.cancel()
    seconds = time.monotonic() - started
    if expired.is_set():
        raise CommandTimeout(args, timeout, "")
    if whole and code != 0:
        raise CommandFailed(Completed(tuple(args), code, "", "", seconds))
    return b"".join(chunks)[:limit], whole


def _execute(
    argv: Sequence[str | os.PathLike[str]],
    *,
    cwd: str | os.PathLike[str] | None,
    env: Mapping[str, str] | None,
    timeout: float,
    input: Any,
    text: bool,
    heartbeat: Callable[[float], None] | None = None,
    heartbeat_every: float = 30.0,
    cancel: threading.Event | None = None,
    supervised: bool = False,
    on_start: Callable[[int], None] | None = None,
    stdout_file: Path | None = None,
    on_line: Callable[[str], None] | None = None,
    stderr_file: Path | None = None,
) -> tuple[list[str], int, Any, Any, float]:
    """Start, wait, and return (argv, exit code, stdout, stderr, seconds)."""
    args = [os.fspath(a) for a in argv]
    log.debug("run: %s (cwd=%s, timeout=%ss)", quote(args), cwd or ".", timeout)
    started = time.monotonic()
    child, lifeline, sink = _spawn(
        args, cwd=cwd, env=env, has_input=input is not None, text=text, supervised=supervised,
        stdout_file=stdout_file, tee=on_line is not None and text, stderr_file=stderr_file,
    )  # fmt: skip
    tee = _Tee(child, on_line, sink) if on_line is not None and text else None
    try:
        if on_start is not None:
            on_start(child.pid)
        out, err = _wait(
            child,
            args,
            input=input,
            timeout=timeout,
            started=started,
            heartbeat=heartbeat,
            heartbeat_every=heartbeat_every if heartbeat else timeout,
            cancel=cancel,
        )
    except CommandTimeout as exc:
        if tee is not None:
            exc.stdout = tee.text()
        raise
    finally:
        if lifeline is not None:
            os.close(lifeline)  # EOF: the supervisor stops whatever is left of the tree
    if tee is not None:
        out = tee.text()
    return args, child.returncode, out, err, time.monotonic() - started


def _spawn(
    args: list[str],
    *,
    cwd: str | os.PathLike[str] | None,
    env: Mapping[str, str] | None,
    has_input: bool,
    text: bool,
    supervised: bool,
    stdout_file: Path | None,
    tee: bool,
    stderr_file: Path | None = None,
) -> tuple[subprocess.Popen[Any], int | None, int | None]:
    """Start the child (supervised or not): (child, lifeline, sink). With `stdout_file` the
    child writes that file itself, or, when its lines are teed, the tee writes them to `sink`."""
    lifeline: int | None = None
    stdout: int | None = None  # the file the child writes itself
    sink: int | None = None  # the file the tee writes what it reads
    stderr: int | None = None
    if stdout_file is not None:
        if tee:
            sink = _open_output(stdout_file)
        else:
            stdout = _open_output(stdout_file)
    try:
        if stderr_file is not None:
            stderr = _open_output(stderr_file)
        if supervised:
            child, lifeline = _start_supervised(
                args, cwd=cwd, env=env, text=text, stdout=stdout, stderr=stderr
            )
        else:
            child = _start(
                args, cwd=cwd, env=env, has_input=has_input, text=text, stdout=stdout,
                stderr=stderr,
            )  # fmt: skip
    except BaseException:
        if sink is not None:
            os.close(sink)
        raise
    finally:
        for fd in (stdout, stderr):
            if fd is not None:
                os.close(fd)  # the child holds its own copy
    return child, lifeline, sink


def _open_output(path: Path) -> int:
    """A command's output file, created 0600 or emptied; never through a symlink."""
    try:
        return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    except OSError as exc:
        raise PlanBuildError(
            f"cannot write the command's output to {path} ({exc.strerror or exc})",
            "check that the folder is writable and the file is not a symlink, then run again",
            code=ExitCode.BLOCKED,
        ) from exc


class _Tee:
    """Reads the child's stdout line by line in a thread, telling `each` every line; the
    child's own `communicate` then reads stderr only."""

    def __init__(
        self, child: subprocess.Popen[Any], each: Callable[[str], None], sink: int | None
    ) -> None:
        self.stream, child.stdout = child.stdout, None
        self.lines: list[str] = []
        self.each = each
        # with a sink, each line goes to that file instead of memory (Codex's event stream)
        self.sink = None if sink is None else os.fdopen(sink, "w", encoding="utf-8")
        self.thread = threading.Thread(target=self._pump, name="stdout-tee", daemon=True)
        self.thread.start()

    def _pump(self) -> None:
        stream = self.stream
        if stream is None:
            return
        with (
            contextlib.suppress(OSError, ValueError),
            stream,
            self.sink or contextlib.nullcontext(),
        ):
            for line in iter(stream.readline, ""):
                if self.sink is not None:
                    self.sink.write(line)
                else:
                    self.lines.append(line)
                with contextlib.suppress(Exception):  # a display must never stop the run
                    self.each(line)

    def text(self) -> str:
        """All stdout so far (nothing with a sink: the file has it); waits a moment for the
        last lines after the child ended (a descendant that keeps the pipe open does not hold
        the caller up)."""
        self.thread.join(timeout=kill_grace())
        return "".join(self.lines)


def _start(
    args: list[str],
    *,
    cwd: str | os.PathLike[str] | None,
    env: Mapping[str, str] | None,
    has_input: bool,
    text: bool,
    pass_fds: tuple[int, ...] = (),
    stdout: int | None = None,
    stderr: int | None = None,
) -> subprocess.Popen[Any]:
    """Start the child in its own session, stdin closed unless input is meant; its stdout
    and stderr to the descriptors `stdout` and `stderr` when given, else captured."""
    try:
        return subprocess.Popen(
            args,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdin=subprocess.PIPE if has_input else subprocess.DEVNULL,
            stdout=subprocess.PIPE if stdout is None else stdout,
            stderr=subprocess.PIPE if stderr is None else stderr,
            text=text,
            encoding="utf-8" if text else None,
            errors="replace" if text else None,
            start_new_session=True,
            pass_fds=pass_fds,
        )
    except FileNotFoundError as exc:
        raise CommandNotFound(args[0]) from exc
    except PermissionError as exc:
        raise PlanBuildError(
            f"{args[0]} is not executable",
            f"check the file's permissions (chmod +x {args[0]})",
            code=ExitCode.PREFLIGHT,
        ) from exc


def _start_supervised(
    args: list[str],
    *,
    cwd: str | os.PathLike[str] | None,
    env: Mapping[str, str] | None,
    text: bool,
    stdout: int | None = None,
    stderr: int | None = None,
) -> tuple[subprocess.Popen[Any], int]:
    """Start `args` under `plan_build.core.supervisor`; returns the child and its lifeline's write
    end."""
    program = which(args[0], env) if os.sep not in args[0] else args[0]
    if program is None:
        raise CommandNotFound(args[0])
    read_end, write_end = os.pipe()
    try:
        child = _start(
            supervisor.argv(read_end, kill_grace(), program, args[1:]),
            cwd=cwd,
            env=env,
            has_input=False,
            text=text,
            pass_fds=(read_end,),
            stdout=stdout,
            stderr=stderr,
        )
    except BaseException:
        os.close(write_end)
        raise
    finally:
        os.close(read_end)
    return child, write_end


def _wait(
    child: subprocess.Popen[Any],
    args: list[str],
    *,
    input: Any,
    timeout: float,
    started: float,
    heartbeat: Callable[[float], None] | None,
    heartbeat_every: float,
    cancel: threading.Event | None = None,
) -> tuple[Any, Any]:
    """Collect the child's output; kill its tree on timeout (CommandTimeout), when `cancel` is
    set from another thread (CommandCancelled) or on interruption."""
    deadline = started + timeout
    next_beat = started + heartbeat_every
    pending_input = input
    try:
        while True:
            now = time.monotonic()
            if now >= deadline:
                partial = _kill_tree(child)
                if isinstance(partial, bytes):
                    partial = partial.decode("utf-8", "replace")
                raise CommandTimeout(args, timeout, partial)
            if cancel is not None and cancel.is_set():
                _kill_tree(child)
                raise CommandCancelled(args)
            window = deadline - now
            if heartbeat:
                window = min(window, max(next_beat - now, 0.0))
            if cancel is not None:
                window = min(window, CANCEL_POLL)
            try:
                return child.communicate(input=pending_input, timeout=window)
            except subprocess.TimeoutExpired:
                pending_input = None
                now = time.monotonic()
                if heartbeat and now >= next_beat and now < deadline:
                    heartbeat(now - started)
                    next_beat = now + heartbeat_every
    except BaseException:
        if child.poll() is None:
            _kill_tree(child)
        raise


def _kill_tree(child: subprocess.Popen[Any]) -> Any:
    """Stop the child, its process group and any descendant that left the group.

    SIGTERM first, SIGKILL after a short grace. Returns whatever stdout was produced.
    """
    pid = child.pid
    if pid <= 0:  # a faked process in tests has no real pid
        child.kill()
        return ""
    try:
        import psutil
    except ImportError:  # a release zipapp on a Python without psutil: stop the group only
        return _kill_group(child)
    victims: list[psutil.Process] = []
    try:
        parent = psutil.Process(pid)
        victims = [parent, *parent.children(recursive=True)]
    except psutil.NoSuchProcess:
        pass
    _signal_group(pid, signal.SIGTERM)
    for proc in victims:
        _signal_proc(proc, signal.SIGTERM)
    _, alive = psutil.wait_procs(victims, timeout=kill_grace())
    _signal_group(pid, signal.SIGKILL)
    for proc in alive:
        _signal_proc(proc, signal.SIGKILL)
    psutil.wait_procs(alive, timeout=kill_grace())
    try:
        out, _ = child.communicate(timeout=kill_grace())
    except (subprocess.TimeoutExpired, ValueError, OSError):
        return ""
    return out or ""


def _kill_group(child: subprocess.Popen[Any]) -> Any:
    """Without psutil: SIGTERM the child's process group, then SIGKILL it after the grace."""
    _signal_group(child.pid, signal.SIGTERM)
    try:
        out, _ = child.communicate(timeout=kill_grace())
        return out or ""
    except (subprocess.TimeoutExpired, ValueError, OSError):
        pass
    _signal_group(child.pid, signal.SIGKILL)
    try:
        out, _ = child.communicate(timeout=kill_grace())
    except (subprocess.TimeoutExpired, ValueError, OSError):
        return ""
    return out or ""


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _signal_proc(proc: psutil.Process, sig: signal.Signals) -> None:
    import psutil

    with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
        proc.send_signal(sig)


def _psutil() -> Any:
    """psutil, imported on first use (None on a Python without it, e.g. a release zipapp)."""
    try:
        import psutil
    except ImportError:
        return None
    return psutil


def stop_survivors(pgid: int, leader_started: float) -> list[int]:
    """Kill what is left of a process group a dead plan-build recorded (its leader's pid and
    start time), with their descendants; returns the pids signalled.

    Nothing is killed when the pid now names a different process (started at another time):
    the group is gone and the number was reused. While any member lives, Linux never hands out
    its group id as a new pid, so a leaderless group with members is still the recorded one.
    """
    psutil = _psutil()
    if psutil is None or pgid <= 1:
        return []
    now = proctree.create_time(pgid)
    if now is not None and abs(now - leader_started) > 0.05:
        return []
    victims: list[Any] = []
    for p in psutil.process_iter():
        try:
            if os.getpgid(p.pid) == pgid and p.create_time() >= leader_started - 0.05:
                victims.append(p)
                victims.extend(p.children(recursive=True))
        except (OSError, psutil.Error):
            continue
    unique = list({p.pid: p for p in victims}.values())
    for proc in unique:
        _signal_proc(proc, signal.SIGTERM)
    _, alive = psutil.wait_procs(unique, timeout=kill_grace())
    for proc in alive:
        _signal_proc(proc, signal.SIGKILL)
    psutil.wait_procs(alive, timeout=kill_grace())
    return [p.pid for p in unique]


def exec_replace(argv: Sequence[str], env: Mapping[str, str], cwd: Path | None = None) -> NoReturn:
    """Replace this process with `argv` (the interactive Claude Code launch)."""
    log.debug("exec: %s", quote(argv))
    if cwd is not None:
        os.chdir(cwd)
    try:
        os.execvpe(argv[0], list(argv), dict(env))
    except FileNotFoundError as exc:
        raise CommandNotFound(argv[0]) from exc


def run_attached(
    argv: Sequence[str],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    terminal: tuple[IO[Any], IO[Any]] | None = None,
) -> int:
    """Run an interactive program (an editor) on the user's terminal and wait for it.

    `terminal` is the (input, output) pair to attach it to when that is not this process's own
    stdin/stdout, e.g. /dev/tty while stdin is a pipe and stdout is captured.
    """
    log.debug("attached: %s", quote(argv))
    stdio: dict[str, Any] = {}
    if terminal is not None:
        stdio = {"stdin": terminal[0], "stdout": terminal[1], "stderr": terminal[1]}
    try:
        child = subprocess.Popen(
            list(argv), cwd=cwd, env=dict(env) if env is not None else None, **stdio
        )
    except FileNotFoundError as exc:
        raise CommandNotFound(argv[0]) from exc
    try:
        return child.wait()
    except BaseException:
        if child.poll() is None:
            _kill_tree(child)
        raise


@dataclass
class Detached:
    """A server started to outlive this run (AgentMemory from `setup`)."""

    child: subprocess.Popen[bytes]

    @property
    def pid(self) -> int:
        return self.child.pid

    def exited(self) -> int | None:
        return self.child.poll()

    def stop(self) -> None:
        """Stop it and everything it started (the caller gave up on it)."""
        if self.child.poll() is None:
            _kill_tree(self.child)


def spawn_detached(
    argv: Sequence[str], *, env: Mapping[str, str], cwd: Path, log_path: Path
) -> Detached:
    """Start `argv` in its own session with stdin closed and its output appended to `log_path`
    (created 0600: a server may print what it was configured with). plan-build does not wait."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    log.debug("detached: %s (log %s)", quote(argv), log_path)
    try:
        child = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=fd,
            stderr=fd,
            start_new_session=True,
        )
    except FileNotFoundError as exc:
        raise CommandNotFound(argv[0]) from exc
    finally:
        os.close(fd)
    return Detached(child)
