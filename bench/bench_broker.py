"""What the session broker (docs/adr/0191) adds to a command an agent runs inside a session.

Inside a session, `plan-build X` hands its command line to the broker, which runs it outside
the sandbox and relays its output: one more Python start (the client), the spool's round trip
(files polled every 20 ms on both sides), the supervisor the broker runs each command under,
and the command itself. The reference is the same command run directly, in the same rounds.

    figure                                  reference                      goal
    status through the broker               status run directly            (shown)
    --version through the broker            --version run directly         (shown: the fixed cost)
    the overhead, in milliseconds           (broker minus direct)          (shown)

A 1,000-file repository with a session baseline and a little session work. Nothing is
asserted. Run: python bench/bench_broker.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import alternate, body, build_repo, command, compile_checkout, env_with

FILES = 1_000


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    runs = 7 if parser.parse_args().quick else 21
    compile_checkout()
    from plan_build.core import brokerclient
    from plan_build.startup import broker

    py = sys.executable
    load = os.getloadavg()
    print(
        f"broker: ratio of medians of {runs} alternating rounds; load average {load[0]:.1f} "
        f"{load[1]:.1f} {load[2]:.1f} on {os.cpu_count()} cores"
    )
    with tempfile.TemporaryDirectory(prefix="pb-bench-broker-") as tmp_name:
        tmp = Path(tmp_name)
        (tmp / "home").mkdir()
        root = tmp / "repo"
        root.mkdir()
        build_repo(root, FILES, FILES // 10, 10)
        env = env_with(HOME=str(tmp / "home"), XDG_STATE_HOME=str(tmp / "home" / "state"))
        env.pop("XDG_RUNTIME_DIR", None)
        pb = [py, "-m", "plan_build"]
        sid = subprocess.run(
            [*pb, "baseline"], cwd=root, env=env, capture_output=True, text=True, check=True
        ).stdout.strip()
        for i in range(20):
            (root / f"session{i:02d}.py").write_text(body(1000 + i))
        env["PLAN_BUILD_SESSION"] = sid
        watched = subprocess.Popen([py, "-c", "import time; time.sleep(3600)"])
        try:
            base, child = broker.start(
                env,
                session_id=sid,
                worktree=root,
                git_dir=root / ".git",
                state_dir=root / ".git" / "plan-build",
                watch=watched.pid,
            )
            brokered = {**env, brokerclient.ENV: str(base)}
            for label, args in (("status", ["status"]), ("--version", ["--version"])):
                med = alternate(
                    {
                        "direct": command([*pb, *args], cwd=root, env=env),
                        "broker": command([*pb, *args], cwd=root, env=brokered),
                    },
                    runs,
                )
                ratio = med["broker"] / med["direct"]
                extra = (med["broker"] - med["direct"]) * 1000
                print(
                    f"  {label + ' through the broker':<32} {med['broker'] * 1000:7.0f} ms  "
                    f"direct {med['direct'] * 1000:7.0f} ms  {ratio:5.2f}x  "
                    f"(+{extra:.0f} ms; client cpu {med['broker.cpu'] * 1000:.0f} ms, "
                    "the run's cpu is the broker's child, not counted)",
                    flush=True,
                )
        finally:
            watched.kill()
            watched.wait()
            child.child.wait(timeout=30)


if __name__ == "__main__":
    main()
