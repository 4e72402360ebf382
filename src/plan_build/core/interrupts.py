"""Which signals stop a run, and the one stretch of work that holds them back.

Every long command answers the same three signals the same way: Ctrl-C (SIGINT), a caller's
timeout or `kill` (SIGTERM) and a closed terminal (SIGHUP) raise KeyboardInterrupt in the main
thread. That unwinds every `finally` (locks released, child process trees killed, resumable
notes written) and `main` exits 130. Python only lets the main thread install handlers, so
elsewhere both context managers are no-ops.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator, Sequence
from types import FrameType

STOPPING: tuple[signal.Signals, ...] = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def signal_name(exc: BaseException) -> str:
    """How the user should read an interruption: 'SIGTERM', 'SIGHUP', or 'Ctrl-C'."""
    name = exc.args[0] if exc.args and isinstance(exc.args[0], str) else ""
    return name if name.startswith("SIG") and name != "SIGINT" else "Ctrl-C"


@contextlib.contextmanager
def _installed(signals: Sequence[signal.Signals], handler: object) -> Iterator[None]:
    previous = {sig: signal.signal(sig, handler) for sig in signals}  # type: ignore[arg-type]
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old if old is not None else signal.SIG_DFL)


@contextlib.contextmanager
def stopping(*, once: bool = False) -> Iterator[None]:
    """While held, SIGINT, SIGTERM and SIGHUP raise KeyboardInterrupt(signal name).

    once: after the first signal, more are ignored so the cleanup it started can finish (a
    user pressing Ctrl-C twice must not leave a terminal in raw mode).
    """
    if not _main_thread():
        yield
        return
    fired = False

    def handler(signum: int, _frame: FrameType | None) -> None:
        nonlocal fired
        if once and fired:
            return
        fired = True
        raise KeyboardInterrupt(signal.Signals(signum).name)

    with _installed(STOPPING, handler):
        yield


@contextlib.contextmanager
def held_back() -> Iterator[list[int]]:
    """Hold the stopping signals back while two writes must land together (HEAD and the index).

    Yields the list of signal numbers that arrived; the caller reports them once it is done.
    """
    caught: list[int] = []
    if not _main_thread():
        yield caught
        return
    with _installed(STOPPING, lambda signum, _frame: caught.append(signum)):
        yield caught


__all__ = ["STOPPING", "held_back", "signal_name", "stopping"]
