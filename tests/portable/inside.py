"""Run pytest with Linux's process facilities taken away (`nox -s portable`, as root).

Started by `unshare --mount --fork`, so every mount here is private to this run:
1. the real procfs is mounted at REALPROC, a path only psutil (its PROCFS_PATH, set by the
   sitecustomize below for every Python that imports it) and the `ps` stand-in (bound over
   /usr/bin/ps) read - on macOS psutil and ps ask the kernel (sysctl/libproc), not /proc;
2. an empty tmpfs covers /proc, so plan-build's own /proc reads find nothing, as on macOS;
3. a seccomp filter makes prctl(PR_SET_CHILD_SUBREAPER) fail with EPERM, as it is absent on
   macOS; it is inherited by pytest and everything pytest starts;
4. `bwrap` on PATH is a stand-in that runs the real bubblewrap in a mount namespace of its own
   with the real procfs back at /proc: the OS's sandbox needs it (as Seatbelt on macOS asks
   the kernel), only plan-build's own reads of /proc are taken away.
PB_PORTABLE=1 tells tests/portable/test_degraded.py to prove all three took effect.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.portable.degrade import refuse_subreaper

REALPROC = "/run/pb-realproc"

SITECUSTOMIZE = f'''
import sys

class _PsutilProcfs:
    """Point psutil at the real procfs once it is imported (import hook: no psutil import here)."""

    def find_spec(self, name, path=None, target=None):
        if name != "psutil":
            return None
        sys.meta_path.remove(self)
        import importlib.util

        spec = importlib.util.find_spec(name)
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            module.PROCFS_PATH = {REALPROC!r}

        spec.loader.exec_module = exec_module
        return spec

sys.meta_path.insert(0, _PsutilProcfs())
'''

PS = f'''#!{sys.executable} -I
"""`ps -A -o KEY=,...` for the portable session, from psutil (as macOS's ps asks the kernel)."""
import sys, time
import psutil
psutil.PROCFS_PATH = {REALPROC!r}
keys = []
args = sys.argv[1:]
env = "-E" in args  # macOS: the environment after the command
for i, a in enumerate(args):
    if a == "-o":
        keys += [k.rstrip("=") for k in args[i + 1].split(",")]
get = {{
    "pid": lambda p: str(p.pid),
    "ppid": lambda p: str(p.ppid()),
    "pgid": lambda p: str(__import__("os").getpgid(p.pid)),
    "lstart": lambda p: time.strftime("%a %b %e %H:%M:%S %Y", time.localtime(p.create_time())),
    "comm": lambda p: p.name(),
    "args": lambda p: " ".join(p.cmdline()) or p.name(),
}}
get["command"] = lambda p: " ".join(
    [get["args"](p), *(f"{{k}}={{v}}" for k, v in (p.environ().items() if env else ()))]
)
for p in psutil.process_iter():
    try:
        print(" ".join(get[k](p) for k in keys or ["pid"]))
    except (psutil.Error, OSError):
        continue
'''


def mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True)


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="pb-portable-"))
    (work / "site").mkdir()
    (work / "site" / "sitecustomize.py").write_text(SITECUSTOMIZE)
    ps = work / "ps"
    ps.write_text(PS)
    ps.chmod(0o755)
    mount("--make-rprivate", "/")
    os.makedirs(REALPROC, exist_ok=True)
    mount("-t", "proc", "proc", REALPROC)
    for target in {os.path.realpath(t) for t in ("/usr/bin/ps", "/bin/ps") if os.path.exists(t)}:
        mount("--bind", str(ps), target)  # the real one would read the hidden /proc
    real_bwrap = shutil.which("bwrap")
    if real_bwrap is not None:
        stand_in = work / "bwrap"
        stand_in.write_text(
            "#!/bin/sh\nexec unshare --mount sh -c "
            f'\'mount --bind {REALPROC} /proc && exec "$0" "$@"\' {real_bwrap} "$@"\n'
        )
        stand_in.chmod(0o755)
    mount("-t", "tmpfs", "-o", "size=1m,mode=555", "tmpfs", "/proc")
    refuse_subreaper()
    env = dict(os.environ, PB_PORTABLE="1", PB_REALPROC=REALPROC)
    env["PATH"] = os.pathsep.join([str(work), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join(
        [str(work / "site"), *filter(None, [env.get("PYTHONPATH")])]
    )
    os.execve(sys.executable, [sys.executable, "-m", "pytest", *sys.argv[1:]], env)


if __name__ == "__main__":
    main()
