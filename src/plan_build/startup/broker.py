"""The session broker: plan-build's own commands an agent may ask for, run outside the sandbox.

Claude Code's OS sandbox keeps the repository's git dir read-only for everything Claude's tools
start (docs/adr/0191), so from inside, `plan-build review`, `verify`, `status`, `dispatch`...
could not write their state. The launch (`launch.execute`) starts this broker first, outside
the sandbox, as a detached child of the process that then becomes Claude (`spawn_detached`,
then exec: Claude stays the launched pid). The broker:

- reads requests from its spool (core/brokerclient.py says the layout), runs each allowed
  command as plan-build's own code from plan-build's own install (`python -I`, never code from
  the work tree), with the launch's environment (not the agent's: GIT_DIR, PATH, PYTHONPATH
  set inside the session do not reach the run) plus PLAN_BUILD_BROKERED, stdin closed and no
  terminal, so a question stops with exit 4 as it does for any agent;
- refuses every command that records a person's decision (commit, review.approve,
  review.done, identity --set, setup, release.*, plan, architect, baseline, restore...) and
  anything it does not know, with a message the agent can act on;
- runs a command only from the repository's work tree or one of plan-build's wave worktrees;
- stops a run's process tree when its client cancels (Ctrl-C, SIGTERM) or goes silent;
- exits, stopping its runs and removing its spool, when the Claude process it watches ends.

Safety does not rest on the broker's judgement alone: whatever it lets through cannot approve
(the approval twins refuse a brokered run, review/twins.py) and the sandbox holds the rest.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from plan_build.core import brokerclient, fsutil, proc, proctree, sessionvars
from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.startup.brokerrules import Places, judge, outside, within

log = logging.getLogger("plan_build.startup.broker")

RUN_TIMEOUT = 24 * 3600.0  # a wave may run for hours; the client's Ctrl-C or death stops it
WATCH_EVERY = 0.5  # seconds between looks at the watched Claude process


def program() -> tuple[str, ...]:
    """How a run starts plan-build: this interpreter, isolated (no user site, no PYTHONPATH,
    not the current folder), with plan-build's own package first: never the work tree's."""
    from plan_build.startup.claudelayer import package_root

    code = (
        f"import sys;sys.path.insert(0,{str(package_root())!r});sys.argv[0]='plan-build';"
        "from plan_build.main import main;main()"
    )
    return (sys.executable, "-I", "-c", code)


def run_env(env: Mapping[str, str], places: Places | None = None) -> dict[str, str]:
    """The environment of every run: the launch's, without the broker's own variable (a run
    does its work itself) and marked as brokered (approval twins refuse such a run), the mark
    naming where the run may be (it checks its own cwd). PATH keeps no relative entry and none
    inside the work tree: the agent writes there, and a `git` it put on PATH would run outside
    the sandbox."""
    worktree = places.worktree if places is not None else None
    out = {k: v for k, v in env.items() if k != brokerclient.ENV}
    out[brokerclient.BROKERED] = places.as_env() if places is not None else "1"
    if "PATH" in out:
        kept = []
        for entry in out["PATH"].split(os.pathsep):
            if not entry or not os.path.isabs(entry):
                continue
            if worktree is not None and within(Path(os.path.realpath(entry)), worktree):
                continue
            kept.append(entry)
        out["PATH"] = os.pathsep.join(kept)
    return out


@dataclass(frozen=True)
class Request:
    argv: list[str]
    cwd: str


@dataclass
class Run:
    nonce: str
    cancel: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None
    finished: bool = False


@dataclass
class Broker:
    base: Path
    places: Places
    env: dict[str, str]
    watch: int
    argv0: tuple[str, ...] = field(default_factory=program)
    runs: dict[str, Run] = field(default_factory=dict)
    stopping: threading.Event = field(default_factory=threading.Event)

    @property
    def requests(self) -> Path:
        return brokerclient.requests_dir(self.base)

    @property
    def answers(self) -> Path:
        return brokerclient.answers_dir(self.base)

    def serve(self) -> None:
        """Claim requests until the watched process ends (or a stop signal), then clean up."""
        started = proctree.create_time(self.watch)
        next_watch = 0.0
        try:
            while not self.stopping.is_set():
                now = time.monotonic()
                if now >= next_watch:
                    if not _same_process(self.watch, started):
                        log.info("watched process %s ended: the broker stops", self.watch)
                        break
                    next_watch = now + WATCH_EVERY
                    _beat(self.base / "alive")
                self.poll()
                time.sleep(brokerclient.POLL)
        finally:
            self.shutdown()

    def poll(self) -> None:
        """One look at the spool: new requests, cancellations, silent clients, read answers."""
        try:
            names = os.listdir(self.requests)
        except FileNotFoundError:
            self.stopping.set()
            return
        present = set(names)
        for name in names:
            nonce, _, kind = name.partition(".")
            if kind == "json" and brokerclient.NONCE.match(nonce) and nonce not in self.runs:
                self.claim(nonce)
        for nonce, run in list(self.runs.items()):
            if f"{nonce}.cancel" in present or (not run.finished and self._silent(nonce)):
                run.cancel.set()
            if f"{nonce}.done" in present and run.finished:
                self.forget(nonce)

    def _silent(self, nonce: str) -> bool:
        try:
            beat = (self.requests / f"{nonce}.alive").stat().st_mtime
        except FileNotFoundError:
            return False  # the client has not beaten yet; claimed moments ago
        return time.time() - beat > brokerclient.STALE

    def claim(self, nonce: str) -> None:
        path = self.requests / f"{nonce}.json"
        try:
            request = _read_request(path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        answer = self.answers / nonce
        try:
            answer.mkdir(mode=0o700)
        except FileExistsError:
            return  # a nonce used twice: the first answer stands
        run = Run(nonce)
        self.runs[nonce] = run
        run.thread = threading.Thread(
            target=self.handle, args=(run, answer, request), name=f"run-{nonce[:8]}", daemon=True
        )
        run.thread.start()

    def handle(self, run: Run, answer: Path, request: Request | PlanBuildError) -> None:
        code = int(ExitCode.INTERNAL)
        try:
            code = self._run(run, answer, request)
        except Exception:
            log.exception("run %s failed", run.nonce)
            _append(answer / "stderr", "plan-build: the session's broker failed to run this\n")
        finally:
            fsutil.atomic_write(answer / "exit", f"{code}\n", mode=0o600)
            run.finished = True

    def _run(self, run: Run, answer: Path, request: Request | PlanBuildError) -> int:
        if isinstance(request, PlanBuildError):
            return _refuse(answer, request)
        argv, cwd = request.argv, request.cwd
        refusal = judge(argv)
        if refusal is None and not self.places.allows(cwd):
            refusal = outside(cwd)
        if refusal is None:
            refusal = self.places.path_refusal(argv, cwd)
        if refusal is not None:
            log.info("refused: %s", proc.quote(argv))
            return _refuse(answer, refusal)
        log.info("run %s: %s (in %s)", run.nonce[:8], proc.quote(argv), cwd)
        try:
            done = proc.run(
                [*self.argv0, *argv],
                cwd=cwd,
                env=run_env(self.env, self.places),
                timeout=RUN_TIMEOUT,
                cancel=run.cancel,
                supervised=True,
                stdout_file=answer / "stdout",
                stderr_file=answer / "stderr",
            )
        except proc.CommandCancelled:
            _append(answer / "stderr", "\nplan-build: interrupted\n")
            return int(ExitCode.INTERRUPTED)
        except PlanBuildError as exc:
            _append(answer / "stderr", f"plan-build: {exc}\n")
            return int(exc.code)
        return done.returncode if done.returncode >= 0 else 128 - done.returncode

    def forget(self, nonce: str) -> None:
        self.runs.pop(nonce, None)
        shutil.rmtree(self.answers / nonce, ignore_errors=True)
        for kind in ("cancel", "alive", "done"):
            with contextlib.suppress(FileNotFoundError):
                (self.requests / f"{nonce}.{kind}").unlink()

    def shutdown(self) -> None:
        for run in self.runs.values():
            run.cancel.set()
        for run in self.runs.values():
            if run.thread is not None:
                run.thread.join(timeout=proc.kill_grace() * 3 + 1)
        shutil.rmtree(self.base, ignore_errors=True)


def _beat(path: Path) -> None:
    """The broker's heartbeat: a client whose run outlives it (SIGKILLed) stops waiting."""
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        os.close(fd)
        os.utime(path)


def _same_process(pid: int, started: float | None) -> bool:
    now = proctree.create_time(pid)
    return now is not None and (started is None or abs(now - started) < 0.05)


def _read_request(path: Path) -> Request | PlanBuildError:
    """The request, or why it cannot be run (read without following a symlink, bounded)."""
    bad = PlanBuildError(
        "the session's broker got a request it cannot read",
        "run the command as `plan-build ...` (the client writes the request)",
        code=ExitCode.USAGE,
    )
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        try:
            data = os.read(fd, brokerclient.MAX_REQUEST + 1)
        finally:
            os.close(fd)
        value = json.loads(data.decode("utf-8")) if len(data) <= brokerclient.MAX_REQUEST else None
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return bad
    if not isinstance(value, dict):
        return bad
    argv, cwd = value.get("argv"), value.get("cwd")
    if not (isinstance(argv, list) and all(isinstance(a, str) and "\0" not in a for a in argv)):
        return bad
    if not isinstance(cwd, str):
        return bad
    return Request(argv, cwd)


def _append(path: Path, text: str) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, text.encode("utf-8"))
        finally:
            os.close(fd)


def _refuse(answer: Path, error: PlanBuildError) -> int:
    _append(answer / "stderr", f"plan-build: {error}\n")
    return int(error.code)


# --- starting it (the launch) --------------------------------------------------------------


def prepare(base: Path, *, forbidden: Sequence[Path]) -> None:
    """Create the spool (0700, fresh), refusing a place inside the repository or its git dir
    (the sandbox keeps those read-only, or would hand an agent the broker's answers)."""
    real = Path(os.path.realpath(base))
    for top in forbidden:
        if within(real, Path(os.path.realpath(top))):
            raise PlanBuildError(
                f"the session broker's spool {base} would be inside {top}",
                "point XDG_RUNTIME_DIR (or XDG_STATE_HOME) outside the repository, then launch "
                "again",
                code=ExitCode.PREFLIGHT,
            )
    shutil.rmtree(base, ignore_errors=True)
    base.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    sweep(base.parent)
    base.mkdir(mode=0o700)
    brokerclient.requests_dir(base).mkdir(mode=0o700)
    brokerclient.answers_dir(base).mkdir(mode=0o700)


ABANDONED = 60.0  # seconds without a heartbeat: the spool of a broker that was killed


def sweep(parent: Path, now: float | None = None) -> list[Path]:
    """Remove the spools of brokers that were killed (a live broker beats twice a second);
    returns what was removed."""
    now = time.time() if now is None else now
    gone = []
    for spool in parent.glob("broker-*"):
        try:
            beat = max(spool.stat().st_mtime, (spool / "alive").stat().st_mtime)
        except FileNotFoundError:
            try:
                beat = spool.stat().st_mtime
            except FileNotFoundError:
                continue
        if now - beat > ABANDONED:
            shutil.rmtree(spool, ignore_errors=True)
            gone.append(spool)
    return gone


def bootstrap() -> tuple[str, ...]:
    """The broker's own program: plan-build's installed code, isolated like a run's."""
    from plan_build.startup.claudelayer import package_root

    code = (
        f"import sys;sys.path.insert(0,{str(package_root())!r});"
        "from plan_build.startup.broker import main;main()"
    )
    return (sys.executable, "-I", "-c", code)


def start(
    env: Mapping[str, str],
    *,
    session_id: str,
    worktree: Path,
    git_dir: Path,
    state_dir: Path,
    watch: int | None = None,
) -> tuple[Path, proc.Detached]:
    """Start the broker for `session_id` (watching this process, which becomes Claude) and
    return its spool base, which the launch exports as PLAN_BUILD_BROKER."""
    base = brokerclient.run_base(env, session_id)
    prepare(base, forbidden=(worktree, git_dir))
    argv = [
        *bootstrap(),
        "--spool", str(base),
        "--watch", str(watch if watch is not None else os.getpid()),
        "--worktree", str(worktree),
        "--git-dir", str(git_dir),
        "--waves", str(state_dir / "worktrees"),  # dispatch/worktrees.base
    ]  # fmt: skip
    child_env = dict(env)
    child_env[brokerclient.ENV] = str(base)
    child = proc.spawn_detached(argv, env=child_env, cwd=base, log_path=base / "broker.log")
    return base, child


def main(argv: Sequence[str] | None = None) -> None:
    """The broker process: `--spool BASE --watch PID --worktree DIR --git-dir DIR --waves DIR`."""
    args = list(sys.argv[1:] if argv is None else argv)
    opts = dict(zip(args[::2], args[1::2], strict=False))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    env = dict(os.environ)
    claude = env.get("CLAUDE_CONFIG_DIR") or str(Path(env.get("HOME") or Path.home()) / ".claude")
    places = Places(
        Path(os.path.realpath(opts["--worktree"])),
        Path(os.path.realpath(opts["--git-dir"])),
        Path(os.path.realpath(opts["--waves"])),
        plans=(Path(os.path.realpath(Path(claude) / "plans")),),
    )
    broker = Broker(Path(opts["--spool"]), places, env, int(opts["--watch"]))
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, lambda *_: broker.stopping.set())
    log.info("broker for session %s serving", env.get(sessionvars.SESSION, "?"))
    broker.serve()


__all__ = [
    "Broker",
    "main",
    "prepare",
    "program",
    "run_env",
    "start",
]
