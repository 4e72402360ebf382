"""Startup: `plan-build --version` against `python -c "import invoke"` (target: within 1.25x).

Run: python bench/bench_startup.py [runs]
"""

from __future__ import annotations

import sys

from _common import median_ms

RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 21


def main() -> None:
    py = sys.executable
    rows = [
        ("python -c pass", median_ms([py, "-c", "pass"], RUNS)),
        ("python -c 'import invoke'  (reference)", median_ms([py, "-c", "import invoke"], RUNS)),
        ("plan-build --version", median_ms([py, "-m", "plan_build", "--version"], RUNS)),
        ("plan-build --list", median_ms([py, "-m", "plan_build", "--list"], RUNS)),
    ]
    print(f"startup, median of {RUNS} runs (wall clock)")
    for name, ms in rows:
        print(f"  {name:<42} {ms:7.1f} ms")
    ratio = rows[2][1] / rows[1][1]
    verdict = "within" if ratio <= 1.25 else "OVER"
    print(f"  plan-build --version / import invoke = {ratio:.2f}x  ({verdict} the 1.25x target)")


if __name__ == "__main__":
    main()
