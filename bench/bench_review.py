"""Review ledger benchmarks: `review.summary` and one round's upsert of 50 findings over
decisions.tsv ledgers of 10k, 100k and 1M rows (50 findings per round, the current round last).

Targets (issue 4): summary < 1 s and a 50-finding upsert < 0.3 s at 100k rows, both scaling
linearly. Figures are printed beside the targets; nothing is asserted.

    python bench/bench_review.py [--sizes 10000,100000,1000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import NOW, ROOT, build_review_repo, decisions_text, review_text
from tests.support.interaction import ScriptedInteraction

from plan_build.core.context import Session
from plan_build.core.resources import locate
from plan_build.core.ui import Console
from plan_build.review import commands
from plan_build.review.ledger import Ledger
from plan_build.review.steps import inspect
from plan_build.review.workflowfile import save


def setup(base: Path, rows: int) -> tuple[Path, Any]:
    return build_review_repo(base, rows)


def session(repo: Path, home: Path) -> Session:
    env = {**os.environ, "HOME": str(home)}
    for var in ("CLAUDE_CODE_SESSION_ID", "PLAN_BUILD_CLAUDE_PID"):
        env.pop(var, None)
    return Session(
        cwd=repo,
        env=env,
        console=Console(stream=io.StringIO(), fancy=False),
        ui=ScriptedInteraction(interactive=False),
        resources=locate(env),
        stdout=io.StringIO(),
    )


def timed(
    fn: Callable[[], object], repeat: int, before: Callable[[], object] | None = None
) -> float:
    samples = []
    for _ in range(repeat):
        if before:
            before()
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def bench(base: Path, home: Path, rows: int, repeat: int) -> dict[str, float]:
    repo, wdir = setup(base, rows)
    s = session(repo, home)
    size_mb = wdir.ledger.stat().st_size / 1e6
    from plan_build.review.workflowfile import load

    summary = timed(lambda: commands.review_summary(s, workflow=None, json=True), repeat)

    def flip(decision: str) -> None:
        wdir.findings("plan", load(wdir).round).write_text(decisions_text(decision))

    state = {"decision": "FIX"}

    def next_token() -> None:
        state["decision"] = "REJECT" if state["decision"] == "FIX" else "FIX"
        flip(state["decision"])

    def upsert() -> None:
        view = inspect(load(wdir), wdir)
        ledger = Ledger.load(wdir.ledger)
        assert ledger.sync("plan", view.round, view.entries(), NOW)
        ledger.save()

    update = timed(upsert, repeat, before=next_token)

    def new_round() -> None:
        wf = load(wdir)
        wf.round += 1
        save(wdir, wf, NOW)
        wdir.review("plan", wf.round).write_text(review_text())
        wdir.findings("plan", wf.round).write_text(decisions_text("FIX"))

    append = timed(upsert, repeat, before=new_round)
    cli = float("nan")
    if rows == 100_000:
        env = {**s.env, "PYTHONPATH": str(ROOT / "src")}
        argv = [sys.executable, "-m", "plan_build", "review.summary", "--json"]

        def run_cli() -> None:
            subprocess.run(argv, cwd=repo, env=env, check=True, capture_output=True)

        cli = timed(run_cli, repeat)
    return {"mb": size_mb, "summary": summary, "update": update, "append": append, "cli": cli}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(prefix="plan-build-bench-") as tmp:
        base = Path(tmp)
        home = base / "home"
        home.mkdir()
        print("review ledger benchmarks (median of", args.repeat, "runs; seconds)")
        print(
            f"{'rows':>9} {'ledger MB':>9} {'summary':>9} {'upsert 50 (update)':>19} "
            f"{'upsert 50 (new round)':>22}"
        )
        results = {}
        for rows in sizes:
            r = bench(base, home, rows, args.repeat)
            results[rows] = r
            print(
                f"{rows:>9,} {r['mb']:>9.1f} {r['summary']:>9.3f} {r['update']:>19.3f} "
                f"{r['append']:>22.3f}"
            )
        print()
        print("targets at 100,000 rows: summary < 1 s; one round's upsert of 50 findings < 0.3 s")
        if 100_000 in results:
            r = results[100_000]
            print(
                f"  measured: summary {r['summary']:.3f} s (in-process), "
                f"{r['cli']:.3f} s as `plan-build review.summary --json` incl. startup; "
                f"upsert {max(r['update'], r['append']):.3f} s"
            )
        if len(sizes) > 1:
            lo, hi = sizes[0], sizes[-1]
            ratio = hi / lo
            for key in ("summary", "update", "append"):
                grow = results[hi][key] / max(results[lo][key], 1e-9)
                print(f"  {key}: x{grow:.1f} time for x{ratio:.0f} rows")


if __name__ == "__main__":
    main()
