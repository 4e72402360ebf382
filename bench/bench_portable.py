"""What the macOS/WSL fallbacks cost (issue 22), each figure beside its Linux path as a ratio
of medians of alternating runs in the same process (docs/portability.md).

    figure                                             reference                  goal
    ignored-path scan, portable walk (macOS)           GNU find -newerct          <= 3x
    supervised command (the supervisor's start)        the same command, direct   <= 3x
    supervised teardown of an orphan that ignores      the kill grace alone       <= 1.5x
      SIGTERM (TERM, the grace, then KILL)

The supervised figure was 2.4-2.75x before issue 22 on the same machine (the supervisor is a
second Python); the goal keeps it there. The walk and find run over the same tree (FILES files
in node_modules, a tenth touched after the stamp). Nothing is asserted; the ratios go in the
closing note.

Run: python bench/bench_portable.py [--files N] [--runs N]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from _common import alternate

from plan_build.core import ctimescan, proc


def build_tree(root: Path, files: int) -> int:
    top = root / "node_modules"
    for i in range(files):
        d = top / f"pkg{i // 100:03d}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i:05d}.js").write_text("x\n")
    time.sleep(0.02)
    since = time.time_ns()
    time.sleep(0.02)
    for i in range(0, files, 10):
        (top / f"pkg{i // 100:03d}" / f"f{i:05d}.js").write_text("y\n")
    return since


def row(name: str, reference: str, figure: float, ref: float, goal: float) -> None:
    ratio = figure / ref if ref else float("inf")
    verdict = "ok" if ratio <= goal else "over"
    print(
        f"{name:<44} {figure * 1000:8.1f} ms  {reference:<26} {ref * 1000:8.1f} ms"
        f"  {ratio:5.2f}x  (goal <= {goal}x: {verdict})"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        since = build_tree(root, args.files)
        find = ctimescan.changed_since(root, ["node_modules"], since, finder="find")
        walk = ctimescan.changed_since(root, ["node_modules"], since, finder="walk")
        assert sorted(find) == sorted(walk), "the walk and find disagree"
        got = alternate(
            {
                "find": lambda: ctimescan.changed_since(
                    root, ["node_modules"], since, None, "find"
                ),
                "walk": lambda: ctimescan.changed_since(
                    root, ["node_modules"], since, None, "walk"
                ),
            },
            args.runs,
        )
        print(f"{args.files} files, {len(find)} changed entries")
        row("ignored-path scan, portable walk", "GNU find", got["walk"], got["find"], 3)

    py = [sys.executable, "-c", "pass"]
    got = alternate(
        {
            "direct": lambda: proc.run(py, timeout=30),
            "supervised": lambda: proc.run(py, timeout=30, supervised=True),
        },
        args.runs,
    )
    row("supervised command", "the same, direct", got["supervised"], got["direct"], 3)

    grace = proc.kill_grace()
    orphan = (  # returns once the orphan ignores SIGTERM (it says so on the pipe)
        "import subprocess, sys\n"
        "g = subprocess.Popen([sys.executable, '-c', 'import signal, time; "
        "signal.signal(signal.SIGTERM, signal.SIG_IGN); print(1, flush=True); time.sleep(60)'],"
        " start_new_session=True, stdout=subprocess.PIPE)\n"
        "g.stdout.readline()\n"
    )
    got = alternate(
        {"teardown": lambda: proc.run([sys.executable, "-c", orphan], timeout=30, supervised=True)},
        max(3, args.runs // 2),
    )
    row(
        "supervised teardown, orphan ignores SIGTERM", "the kill grace", got["teardown"], grace, 1.5
    )
    print(f"(PLAN_BUILD_KILL_GRACE={os.environ.get('PLAN_BUILD_KILL_GRACE', 'unset')})")


if __name__ == "__main__":
    main()
