"""What the sandbox costs each check plan-build runs for the project (issue 40, ADR 0190):
one check through `checkrun.run_check` under the session's policy (bubblewrap), beside the
same check run bare, and beside `run_check` without a policy (what it cost before).

    figure                                              reference                goal
    `true` under the policy                             `true` run bare          +< 50 ms
    `python -c pass` under the policy                   `python -c pass` bare    +< 50 ms
    `git status` under the policy                       `git status` bare        +< 50 ms
    the policy itself (discovery, user settings)        one `git rev-parse`      shown

Each figure is the median of alternating rounds on this machine, so load slows every column
alike. Nothing is asserted. Run: python bench/bench_sandbox.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from _common import alternate, build_repo, timed

from plan_build.core import proc, sandbox
from plan_build.core.checkrun import run_check


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    runs = 7 if parser.parse_args().quick else 31
    layer = sandbox.probe(dict(os.environ))
    if not layer.ok:
        print(f"skipped: {layer.problem}")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        repo.mkdir()
        build_repo(repo, tracked=2000, modified=50, untracked=20)
        env = dict(os.environ)
        policy = sandbox.for_checks(repo, env)
        print(f"sandbox per check, median of {runs} alternating rounds (goal: +< 50 ms)")
        print(
            f"{'check':<18} {'bare':>9} {'no policy':>10} {'policy':>9} {'added':>9} {'ratio':>7}"
        )
        for name, argv in (
            ("true", [proc.which("true", env) or "/bin/true"]),
            ("python -c pass", [sys.executable, "-c", "pass"]),
            ("git status", ["git", "status", "--short"]),
        ):
            got = alternate(
                {
                    "bare": lambda a=argv: proc.run(a, cwd=repo, env=env, timeout=60),
                    "plain": lambda a=argv: run_check(
                        a, cwd=repo, env=env, timeout=60, policy=None
                    ),
                    "boxed": lambda a=argv: run_check(
                        a, cwd=repo, env=env, timeout=60, policy=policy
                    ),
                },
                runs,
            )
            bare, plain, boxed = (got[k] * 1000 for k in ("bare", "plain", "boxed"))
            print(
                f"{name:<18} {bare:>7.1f}ms {plain:>8.1f}ms {boxed:>7.1f}ms "
                f"{boxed - bare:>+7.1f}ms {boxed / bare:>6.2f}x"
            )
        discover = sorted(timed(lambda: sandbox.for_checks(repo, env)) for _ in range(runs))
        rev = sorted(
            timed(lambda: proc.run(["git", "rev-parse", "--git-dir"], cwd=repo, env=env))
            for _ in range(runs)
        )
        d, r = discover[runs // 2] * 1000, rev[runs // 2] * 1000
        print(f"the policy (once per verify / task): {d:.1f} ms · one git rev-parse {r:.1f} ms "
              f"({d / r:.2f}x)")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
