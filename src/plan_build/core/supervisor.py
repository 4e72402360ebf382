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

# The supervisor: started as the leader of a new session and group, it runs the command in that
# group and waits. When the command exits, or when the lifeline pipe from plan-build reaches EOF
# (plan-build exited or was SIGKILLed: the kernel closes its end), it stops the group, every
# descendant and every group a descendant leads, then exits with the command's status.
# Descendants are found by parentage in /proc, or in `ps -A -E -o pid=,ppid=,pgid=,lstart=,command=`
# where there is no /proc (macOS). On Linux it is a child subreaper, so orphans are re-parented
# to it and stay findable; where that fails (macOS) it polls while the command runs and
# remembers every descendant it has seen with its start time, so an orphan re-parented to init
# is still stopped, and a pid reused by a stranger (another start time) is not. An orphan born
# and re-parented between two polls is found by the random mark the command's environment
# carries (PB_SUPERVISOR; a name without KEY/TOKEN/SECRET, which Codex's shell policy drops),
# read from /proc/PID/environ or from `ps -E`. Only a descendant that both leaves the session
# and clears its environment within one poll escapes (docs/portability.md).
SUPERVISOR = r"""
import ctypes, os, signal, sys, threading, time
fd = int(sys.argv[1]); grace = float(sys.argv[2]); argv = sys.argv[3:]
try:
    reaper = ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0  # CHILD_SUBREAPER
except Exception:
    reaper = False
me = os.getpid(); mine = os.getpgid(0)
procfs = os.path.exists("/proc/self/stat")
mark = "PB_SUPERVISOR=" + os.urandom(16).hex()  # in the command's environment, and so its tree's
def table():
    # {pid: (ppid, pgid, start, marked)}: from /proc, else from ps (macOS, or /proc hidden);
    # marked: the process carries this supervisor's mark in its environment
    rows = {}
    if procfs:
        want = b"\0" + mark.encode() + b"\0"
        for name in os.listdir("/proc"):
            if name.isdigit():
                try:
                    with open(f"/proc/{name}/stat", "rb") as fh:
                        f = fh.read().rsplit(b")", 1)[1].split()
                    marked = False
                    if not reaper:  # a subreaper finds orphans by parentage
                        try:
                            with open(f"/proc/{name}/environ", "rb") as fh:
                                marked = want in b"\0" + fh.read()
                        except OSError:
                            pass
                    rows[int(name)] = (int(f[1]), int(f[2]), f[19].decode(), marked)
                except (OSError, ValueError, IndexError):
                    continue
        return rows
    import subprocess  # only here: its import is most of a supervised run's start-up
    out = ""
    for ps in ("ps", "/bin/ps", "/usr/bin/ps"):
        try:  # -E: the environment after the command (macOS); lstart is five words
            out = subprocess.run([ps, "-A", "-E", "-o", "pid=,ppid=,pgid=,lstart=,command="],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                timeout=10).stdout.decode(errors="replace")
            break
        except (OSError, subprocess.SubprocessError):
            continue
    for line in out.splitlines():
        f = line.split(None, 8)
        try:
            rest = f" {f[8]} " if len(f) > 8 else ""
            rows[int(f[0])] = (int(f[1]), int(f[2]), " ".join(f[3:8]), f" {mark} " in rest)
        except (ValueError, IndexError):
            continue
    return rows
seen = {}  # every descendant ever seen: pid -> start (a reused pid has another start)
lock = threading.Lock()
def look():
    # the live descendants: by parentage from me, from any pid seen before (a re-parented
    # orphan) or from a marked one, plus members of the groups they lead; records each in `seen`
    rows = table()
    with lock:
        roots = {me} | {p for p, s in seen.items() if p in rows and rows[p][2] == s}
        roots |= {p for p, r in rows.items() if r[3]}  # marked: ours, wherever it went
        kids = {}
        for pid, row in rows.items():
            kids.setdefault(row[0], []).append(pid)
        found, todo = set(), list(roots)
        while todo:
            for pid in kids.get(todo.pop(), []):
                if pid not in found and pid != me:
                    found.add(pid); todo.append(pid)
        found |= roots - {me}
        found |= {p for p, r in rows.items() if r[1] == mine and p != me}  # my group
        groups = {rows[p][1] for p in found} - {mine}  # groups a descendant leads
        found |= {p for p, r in rows.items() if r[1] in groups and p != me}
        for pid in found:
            seen.setdefault(pid, rows[pid][2])
        return found, groups
def poll():
    while True:
        time.sleep(0.2)
        look()
def stop():
    for sig in (signal.SIGTERM, signal.SIGKILL):
        found, groups = look()
        for g in groups:
            try:
                os.killpg(g, sig)
            except OSError:
                pass
        for pid in found:
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
                pass
            # the signalled ones by pid (a whole table is a `ps` run where there is no /proc),
            # then one full look for any started meanwhile
            if not any(running(p) for p in found):
                if not look()[0]:
                    return
                break
            time.sleep(0.05)
def running(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    if procfs:  # a zombie has ended; only its parent's wait is missing
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                return fh.read().rsplit(b")", 1)[1].split()[0] != b"Z"
        except (OSError, IndexError):
            return False
    return True
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
    os.environ["PB_SUPERVISOR"] = mark.split("=", 1)[1]
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        os.write(2, f"{argv[0]}: {exc}\n".encode()); os._exit(127)
threading.Thread(target=watch, daemon=True).start()
if not reaper:  # orphans go to init: keep a record of each descendant while it runs
    look()
    threading.Thread(target=poll, daemon=True).start()
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
