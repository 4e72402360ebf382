"""A private tmux server (its own socket) that gives a real terminal to an interactive program.

The pane runs the argv directly (no shell in between), so the pane's pid is the program's pid,
and stays after the program exits (remain-on-exit) so its last screen and exit status can be
read. Every wait is bounded and a timeout shows the screen.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")
TMUX = shutil.which("tmux") or "/usr/bin/tmux"


class Tmux:
    def __init__(self, socket: Path, env: Mapping[str, str]) -> None:
        self.socket = socket
        self.env = dict(env)
        self.target = "contract"
        self.pane_pid: int | None = None

    def _tmux(self, *args: str, check: bool = True) -> str:
        r = subprocess.run(
            [TMUX, "-S", str(self.socket), *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
            stdin=subprocess.DEVNULL,
        )
        if check and r.returncode != 0:
            raise RuntimeError(f"tmux {' '.join(args)} exited {r.returncode}: {r.stderr.strip()}")
        return r.stdout

    def start(
        self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], width: int = 200
    ) -> int:
        """Start `argv` in a new pane with exactly `env`; return the pane's (program's) pid."""
        self.env = dict(env)  # the server is started by this call and inherits this environment
        self._tmux(
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-x",
            str(width),
            "-y",
            "50",
            "-s",
            self.target,
            "-c",
            str(cwd),
            *argv,
        )
        self._tmux("set-option", "-t", self.target, "remain-on-exit", "on")
        self.pane_pid = int(self.display("#{pane_pid}"))
        return self.pane_pid

    def display(self, fmt: str) -> str:
        return self._tmux("display-message", "-p", "-t", self.target, fmt).strip()

    def state(self) -> str:
        """What tmux says about the pane (for failure messages)."""
        fmt = "dead=#{pane_dead} status=#{pane_dead_status} pid=#{pane_pid}"
        return f"tmux: {self.display(fmt)}, process: {self._proc_stat()[:1] or ['gone']}"

    def _proc_stat(self) -> list[str]:
        """/proc/<pane pid>/stat fields from the state on (field 3), or [] when gone."""
        try:
            text = Path(f"/proc/{self.pane_pid}/stat").read_text()
        except (OSError, TypeError):
            return []
        return text.rsplit(")", 1)[1].split()

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-J", "-t", self.target, "-S", "-200", check=False)

    def type(self, text: str, *, enter: bool = True) -> None:
        """Type `text` literally, then press Enter (as a separate key, like a person)."""
        if text:
            self._tmux("send-keys", "-t", self.target, "-l", "--", text)
        if enter:
            time.sleep(0.3)
            self.press("Enter")

    def dead(self) -> bool:
        """The program has exited and its exit status is known."""
        return self.display("#{pane_dead}") == "1" and self.exit_status() is not None

    def exit_status(self) -> int | None:
        """The exit status tmux recorded, or, when tmux has not reaped the process yet (seen
        with tmux 3.3a: the pane is dead but its process stays a zombie), the status the
        kernel keeps for the zombie (/proc/<pid>/stat field 52)."""
        status = self.display("#{pane_dead_status}")
        if status.lstrip("-").isdigit():
            return int(status)
        fields = self._proc_stat()
        if fields and fields[0] == "Z" and len(fields) >= 50:
            return os.waitstatus_to_exitcode(int(fields[49]))
        return None

    def press(self, key: str) -> None:
        self._tmux("send-keys", "-t", self.target, key)

    def command(self, text: str, timeout: float) -> None:
        """Type a slash command into a TUI and press Enter until the program exits. Claude's
        command menu may take the first Enter to complete the command rather than run it."""
        self.type(text, enter=False)
        self.wait_text(text, 10)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.press("Enter")
            try:
                self.wait(f"the program to exit after {text}", self.dead, 5)
                return
            except AssertionError:
                continue
        self.wait(f"the program to exit after {text}", self.dead, 0)

    def wait(self, what: str, check: Callable[[], T | None], timeout: float) -> T:
        """Poll `check` until it returns something truthy; fail with the screen after timeout."""
        deadline = time.monotonic() + timeout
        while True:
            value = check()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"timed out after {timeout:g}s waiting for {what}; {self.state()}; "
                    f"screen:\n{self.screen()}"
                )
            time.sleep(0.2)

    def wait_text(self, text: str, timeout: float) -> str:
        def found() -> str | None:
            screen = self.screen()
            return screen if text in screen else None

        return self.wait(repr(text), found, timeout)

    def close(self) -> None:
        """Stop this private server; tmux hangs up on the program still in its pane."""
        self._tmux("kill-server", check=False)
