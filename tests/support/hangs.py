"""What a hung test leaves for whoever reads the log: pytest-timeout prints every thread's
stack; before it does, this prints the process tree under the test process (the agents,
supervisors and stubs a test started), since a hang in this suite is usually a child that
never ended or a pipe a grandchild still holds."""

from __future__ import annotations

import os
import threading
from typing import Any

import psutil
import pytest


def tree_lines(pid: int | None = None) -> list[str]:
    """One line per descendant of `pid` (this process by default): pid, parent, status, argv."""
    try:
        root = psutil.Process(pid or os.getpid())
        kids = root.children(recursive=True)
    except psutil.Error as exc:
        return [f"(no process tree: {exc})"]
    lines = []
    for p in [root, *kids]:
        try:
            argv = " ".join(p.cmdline())[:200] or p.name()
            lines.append(f"{p.pid:>7} {p.ppid():>7} {p.status():<9} {argv}")
        except psutil.Error:
            continue
    return ["    pid    ppid status    command", *lines]


@pytest.hookimpl(tryfirst=True)
def pytest_timeout_set_timer(item: Any, settings: Any) -> bool | None:
    """pytest-timeout's thread method, with the process tree printed first (a plugin:
    tests/conftest.py imports this hook; `-p tests.support.hangs` loads it elsewhere)."""
    import pytest_timeout

    if settings.method != "thread":
        return None  # the plugin's own handling

    def expire() -> None:
        terminal = item.config.get_terminal_writer()
        terminal.sep("+", title=f"Timeout after {settings.timeout} s: process tree")
        terminal.write("\n".join(tree_lines()) + "\n")
        pytest_timeout.timeout_timer(item, settings)  # the stacks, then os._exit(1)

    timer = threading.Timer(settings.timeout, expire)
    timer.name = f"pytest-timeout {item.nodeid}"
    timer.daemon = True

    def cancel() -> None:
        timer.cancel()
        timer.join()

    item.cancel_timeout = cancel
    timer.start()
    return True
