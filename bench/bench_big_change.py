"""A big change (issue 36, item 7): `status`, `verify` and `report` on a 5,000-file change in a
20,000-file repository, each beside `git status` measured in the same rounds.

The repository: 20,000 committed files and a `.plan-build.yaml` with one trivial verify
command (`true`); a session baseline; then 5,000 of the files edited (one line each). Each
command runs as a process, as a user runs it, in turn within each round (so a busy machine
slows them all alike), after one warm-up round.

    figure                              reference               goal (the small-change benches)
    plan-build status                   git status, same run    (shown; bench_status: <= 1.2x
                                                                 of status before)
    plan-build verify (`true` only)     git status, same run    (shown; bench_verify: the
                                                                 change within 2x of git status)
    plan-build report (HTML)            git status, same run    (shown)
    the HTML report's size              731 KB (issue 36)       smaller

Issue 36 measured on a quiet machine: git status 0.08-0.16 s, status 1.83 s cold / 0.77 s
warm, verify 3.4 s, report 4.6 s, 731 KB. Nothing is asserted.

Run: python bench/bench_big_change.py [--quick] [--rounds N] [--profile status|verify|report]
(PLAN_BUILD_BENCH_SRC=DIR times another copy of the package, e.g. `git archive main src
templates skills` unpacked into DIR, for the figures before a change; `--profile` prints
cProfile's top of one command instead of the timings.)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import (
    alternate,
    build_repo,
    command,
    compile_checkout,
    env_with,
    start_session,
)

TRACKED, CHANGED = 20_000, 5_000
ISSUE_KB = 731


CONFIG = 'verify:\n  commands:\n    - name: trivial\n      argv: ["true"]\n'


def change(root: Path, tracked: int, changed: int) -> None:
    step = tracked // changed
    for i in range(0, step * changed, step):
        p = root / f"pkg{i // 200:03d}" / f"mod{i:05d}.py"
        p.write_text(p.read_text() + f"# changed {i}\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2,000 files, 500 changed")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", choices=("status", "verify", "report"), default="")
    ns = parser.parse_args()
    tracked, changed = (2_000, 500) if ns.quick else (TRACKED, CHANGED)
    compile_checkout()
    py = sys.executable
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="pb-bench-big-") as tmp_name:
        tmp = Path(tmp_name)
        (tmp / "home").mkdir()
        root = tmp / "big"
        root.mkdir()
        t0 = time.perf_counter()
        build_repo(root, tracked, 0, 0, {".plan-build.yaml": CONFIG})  # one verify: `true`
        env = env_with(HOME=str(tmp / "home"))
        sid = start_session(py, root, env)
        change(root, tracked, changed)
        env["PLAN_BUILD_SESSION"] = sid
        pb = [py, "-m", "plan_build"]
        print(
            f"big change: {tracked} files, {changed} changed (built in "
            f"{time.perf_counter() - t0:.0f} s); median of {ns.rounds} alternating rounds; "
            f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} on {os.cpu_count()} cores"
        )
        cold = command([*pb, "status"], cwd=root, env=env)()  # the first, before any warm-up
        if ns.profile:
            args = {"status": ["status"], "verify": ["verify"], "report": ["report"]}[ns.profile]
            out = tmp / "profile.out"
            subprocess.run(
                [py, "-m", "cProfile", "-o", str(out), "-m", "plan_build", *args],
                cwd=root,
                env=env,
                capture_output=True,
                check=False,
            )
            import pstats

            pstats.Stats(str(out)).sort_stats("cumulative").print_stats(40)
            return
        med = alternate(
            {
                "git status": command(["git", "status", "--porcelain"], cwd=root, env=env),
                "status": command([*pb, "status"], cwd=root, env=env),
                "verify": command([*pb, "verify"], cwd=root, env=env),
                "report": command([*pb, "report"], cwd=root, env=env),
            },
            ns.rounds,
        )
        ref = med["git status"]
        print(f"  git status --porcelain (reference)   {ref * 1000:7.0f} ms")
        print(f"  plan-build status, cold (first run)  {cold * 1000:7.0f} ms  {cold / ref:6.1f}x")
        for name in ("status", "verify", "report"):
            label = {
                "status": "plan-build status, warm",
                "verify": "plan-build verify (`true`)",
                "report": "plan-build report (HTML)",
            }[name]
            print(
                f"  {label:<36} {med[name] * 1000:7.0f} ms  {med[name] / ref:6.1f}x git status"
                f"  [cpu {med[name + '.cpu']:.2f} s]"
            )
        page = root / ".git" / "plan-build" / "sessions" / sid / "report.html"
        kb = page.stat().st_size / 1024 if page.exists() else float("nan")
        print(
            f"  HTML report size                     {kb:7.0f} KB  {kb / ISSUE_KB:6.2f}x the "
            f"{ISSUE_KB} KB of issue 36"
        )


if __name__ == "__main__":
    main()
