"""Checkpoints before every agent write (issue 37): what one hook call costs, beside `git
status` in the same repository and the same run.

    figure                                              reference              goal
    unchanged tree: the `checkpoint` hook as Claude     `git status`, same     next to nothing
      runs it (sh, Python, one find)                    repository
    changed tree (10 files edited): the hook call,      `git status`           about 1x plus
      a new checkpoint written                                                 the objects
    the first checkpoint (every file hashed once),      `git status`           (shown)
      taken by the launch, outside any hook deadline

At 20k and 200k tracked files (200 files a directory, a few hundred bytes each). Generating the
200k repository takes a few minutes; `--small` stops after 20k. Nothing is asserted.
Run: python bench/bench_checkpoint.py [--small] [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from plan_build.startup import claudelayer


def sh(cwd: Path, *args: str) -> None:
    subprocess.run(args, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def make_repo(root: Path, files: int) -> None:
    root.mkdir()
    sh(root, "git", "init", "-q")
    per_dir = 200
    for i in range(files):
        folder = root / f"d{i // per_dir:04d}"
        if i % per_dir == 0:
            folder.mkdir()
        (folder / f"f{i:06d}.txt").write_text(f"file {i}\n" + "x" * 200 + "\n")
    sh(root, "git", "add", "-A")
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b"}
    env |= {"GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@b"}
    subprocess.run(["git", "commit", "-qm", "files"], cwd=root, check=True, env=env)


def timed(
    argv: list[str], cwd: Path, payload: str | None = None, env: dict[str, str] | None = None
) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        argv,
        cwd=cwd,
        input=payload.encode() if payload is not None else None,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{argv[0]} failed: {done.stderr.decode()}")
    return (time.perf_counter() - started) * 1000


FIRST = (
    "import sys; from pathlib import Path; from plan_build.core import checkpoint, gitrepo; "
    "checkpoint.take(gitrepo.discover(Path(sys.argv[1])), 'session start')"
)


def measure(root: Path, rounds: int) -> dict[str, float]:
    env = dict(os.environ)
    env[claudelayer.HOOK_ENV] = claudelayer.hook_program()
    env["CLAUDE_PROJECT_DIR"] = str(root)
    hook = ["sh", "-c", claudelayer.hook_command("checkpoint", mode="plan")]
    payload = json.dumps({"tool_name": "Bash", "tool_input": {"command": "ls"}, "cwd": str(root)})
    status = ["git", "status", "--porcelain"]
    timed(status, root)  # warm the page cache and the index's stat data
    first = timed([sys.executable, "-c", FIRST, str(root)], root)  # as the launch takes it
    same: list[float] = []
    changed: list[float] = []
    statuses: list[float] = []
    for n in range(rounds):
        statuses.append(timed(status, root))
        same.append(timed(hook, root, payload, env))
        for i in range(10):
            path = root / f"d{i:04d}" / f"f{i * 200:06d}.txt"
            path.write_text(f"round {n}\n")
        changed.append(timed(hook, root, payload, env))
    return {
        "git status": statistics.median(statuses),
        "unchanged": statistics.median(same),
        "changed": statistics.median(changed),
        "first": first,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--small", action="store_true")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    sizes = [20_000] if args.small else [20_000, 200_000]
    floor_cmd = [sys.executable, "-I", "-S", "-c", "pass"]
    with tempfile.TemporaryDirectory() as tmp:
        for files in sizes:
            root = Path(tmp) / f"r{files}"
            started = time.perf_counter()
            make_repo(root, files)
            made = time.perf_counter() - started
            got = measure(root, args.rounds)
            floor = statistics.median(timed(floor_cmd, root) for _ in range(5))
            ref = got["git status"]
            print(f"{files} tracked files (generated in {made:.0f} s), median of {args.rounds}")
            print(f"  {'figure':44} {'ms':>8} {'x git status':>13}")
            print(f"  {'git status --porcelain (reference)':44} {ref:8.1f} {1:12.2f}x")
            for key, name in (
                ("unchanged", "hook call, unchanged tree"),
                ("changed", "hook call, 10 files changed (new checkpoint)"),
                ("first", "the first checkpoint (at launch)"),
            ):
                print(f"  {name:44} {got[key]:8.1f} {got[key] / ref:12.2f}x")
            print(f"  {'python -I -S -c pass (the floor of any hook)':44} {floor:8.1f}")


if __name__ == "__main__":
    main()
