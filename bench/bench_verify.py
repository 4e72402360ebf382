"""Baseline capture, intended change and secret scan on a large generated repository.

References (issue 5): on 20,000 tracked files with 2,000 modified and 500 untracked, baseline
capture and intended-change computation each within 2x of `git status --porcelain` on the same
repository, measured side by side (the three are timed in turn within each round, so a busy
machine slows all of them alike); the secret scan of a 50-file diff under 2 s.

Run: python bench/bench_verify.py [rounds]   (builds the repository in a temp dir first)
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _common
from _common import build_repo, timed

from plan_build.core import gitrepo
from plan_build.delivery import baseline
from plan_build.delivery import intended as change
from plan_build.delivery import verify as verify_mod

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 9
TRACKED, MODIFIED, UNTRACKED, SCANNED = 20_000, 2_000, 500, 50


def verdict(value: float, limit: float) -> str:
    return "within" if value <= limit else "OVER"


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="pb-bench-verify-") as tmp:
        root = Path(tmp) / "big"
        root.mkdir()
        t0 = time.perf_counter()
        build_repo(root, TRACKED, MODIFIED, UNTRACKED)
        repo = gitrepo.discover(root)
        print(
            f"repository: {TRACKED} tracked, {MODIFIED} modified, {UNTRACKED} untracked "
            f"(built in {time.perf_counter() - t0:.0f}s); median of {ROUNDS} interleaved rounds"
        )
        base = baseline.capture(repo, session_id="bench")  # also warms caches and objects
        for i in range(SCANNED):  # the session's work: 50 files, one with a planted key
            (root / "new" / f"session{i:02d}.py").write_text(_common.body(1000 + i))
        planted = "AKIA" + "QWERTYUIOPASDFGH"
        (root / "new" / "session00.py").write_text(_common.body(1000) + f'KEY = "{planted}"\n')

        def status() -> object:
            return subprocess.run(
                ["git", "status", "--porcelain"], cwd=root, capture_output=True, check=True
            )

        ids = iter(range(100_000))
        rows: dict[str, list[float]] = {"status": [], "capture": [], "compute": []}
        status()
        for _ in range(ROUNDS):
            rows["status"].append(timed(status))
            rows["capture"].append(
                timed(lambda: baseline.capture(repo, session_id=f"b{next(ids)}"))
            )
            rows["compute"].append(timed(lambda: change.compute(repo, base)))
        med = {k: statistics.median(v) for k, v in rows.items()}
        ch = change.compute(repo, base)

        def scan() -> object:
            added = change.added_lines(repo, base.worktree_tree, ch.tree)
            return verify_mod.check_secrets(added)[0][0]

        first_started = time.perf_counter()
        result = scan()
        first = time.perf_counter() - first_started
        warm = statistics.median(timed(scan) for _ in range(3))
        lines = sum(len(v) for v in change.added_lines(repo, base.worktree_tree, ch.tree).values())

        r1, r2 = med["capture"] / med["status"], med["compute"] / med["status"]
        print(f"  git status --porcelain (reference)  {med['status'] * 1000:7.0f} ms")
        print(
            f"  baseline capture                    {med['capture'] * 1000:7.0f} ms  "
            f"= {r1:.2f}x status ({verdict(r1, 2.0)} the 2x target)"
        )
        print(
            f"  intended change ({len(ch.files)} files)         {med['compute'] * 1000:7.0f} ms  "
            f"= {r2:.2f}x status ({verdict(r2, 2.0)} the 2x target)"
        )
        print(
            f"  secret scan, {SCANNED} files / {lines} lines     {first * 1000:7.0f} ms first run "
            f"(import, canary, git diff), {warm * 1000:.0f} ms after ({verdict(first, 2.0)} 2 s)"
        )
        print(f"  planted key reported: {getattr(result, 'detail', result)}")


if __name__ == "__main__":
    main()
