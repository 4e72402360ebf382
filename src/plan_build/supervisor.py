"""The small supervisor `proc.run(..., supervised=True)` puts between plan-build and a command.

It exists so that no process of a supervised command's tree outlives plan-build, even when
plan-build is SIGKILLed (docs/adr/0063): it runs as its own `python -I -S -c` program, reads
nothing of plan_build, and holds the read end of a lifeline pipe whose EOF means "stop".
Starting it is `proc`'s job (the one module that starts processes); this is the program and
its command line.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

# The supervisor: started in the command's new session, it becomes a child subreaper (orphaned
# descendants are re-parented to it, so they stay findable), runs the command in its own
# process group and waits. When the command exits, or when the lifeline pipe from plan-build
# reaches EOF (plan-build exited or was SIGKILLed: the kernel closes its end), it stops the
# whole group and every descendant, then exits with the command's status.
SUPERVISOR = r"""
import ctypes, os, signal, sys, threading, time
fd = int(sys.argv[1]); grace = float(sys.argv[2]); argv = sys.argv[3:]
try:
    ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
except Exception:
    pass
me = os.getpid()
def descendants():
    kids = {}
    try:
        names = os.listdir("/proc")
    except OSError:  # no procfs (not Linux): only what proc.py's own kill reaches
        names = []
    for name in names:
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as fh:
                    ppid = int(fh.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            kids.setdefault(ppid, []).append(int(name))
    found, todo = [], [me]
    while todo:
        for pid in kids.get(todo.pop(), []):
            found.append(pid); todo.append(pid)
    return found
def stop():
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in descendants():
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        end = time.monotonic() + grace
        while time.monotonic() < end:
            try:
                while os.waitpid(-1, os.WNOHANG)[0]:
                    pass
            except ChildProcessError:
                return
            if not descendants():
                return
            time.sleep(0.05)
def watch():
    while os.read(fd, 1):
        pass
    stop()
    os._exit(137)
try:
    pid = os.fork()
except OSError:
    os._exit(126)
if pid == 0:
    os.close(fd)
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        os.write(2, f"{argv[0]}: {exc}\n".encode()); os._exit(127)
threading.Thread(target=watch, daemon=True).start()
for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
    signal.signal(sig, lambda s, f: (stop(), os._exit(128 + s)))
while True:
    try:
        got, status = os.waitpid(pid, 0)
        break
    except ChildProcessError:
        status = 0; break
    except InterruptedError:
        continue
stop()
code = os.waitstatus_to_exitcode(status)
if code < 0:
    signal.signal(-code, signal.SIG_DFL); os.kill(me, -code)
os._exit(code)
"""


def argv(lifeline: int, grace: float, program: str, args: Sequence[str]) -> list[str]:
    """The supervisor's command line: watch fd `lifeline`, stop the tree with `grace` seconds
    between SIGTERM and SIGKILL, and run `program` with `args`."""
    return [
        sys.executable,
        *("-I", "-S", "-c", SUPERVISOR),
        *(str(lifeline), str(grace), program),
        *args,
    ]
