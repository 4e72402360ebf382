"""Wave worktree readiness (ADR 0196): what making a task's worktree able to run the project's
checks costs, for a `node_modules` of F files git ignores, beside `git worktree add` alone.

Prints each figure beside its reference, measured in the same run; nothing here asserts.
Run: python bench/bench_wave_ready.py [--files 50000] [--repeat 3]

Figures (medians, runs alternated so each sees the same machine):
- reference: a bare `git worktree add --detach`
- plan-build's own worktree with nothing brought in (its snapshot's read-tree), then each way
  of bringing `node_modules` in, as a ratio to the reference and as time over plan-build's own
- plan-build's worktree plus `node_modules` linked (Claude's `worktree.symlinkDirectories`)
  (target: a few ms over plan-build's own worktree, whatever the folder's size)
- plan-build's worktree plus `node_modules` copied (`.worktreeinclude`, `cp -a
  --reflink=auto`: a clone where the file system can, else a copy; the file system is named)
- plan-build's worktree plus a setup command (`true`) run through run_check
- the scan of the linked folder after a Codex run that changed nothing (the scope check of a
  linked folder), beside one `find` listing the same folder
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT

from plan_build.core import gitrepo, snapshot
from plan_build.dispatch import worktreeprep, worktrees


def git(cwd: Path, env: dict[str, str], *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def make_repo(root: Path, files: int) -> tuple[Path, dict[str, str]]:
    env = {
        **os.environ,
        "HOME": str(root / "home"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "b",
        "GIT_AUTHOR_EMAIL": "b@example.com",
        "GIT_COMMITTER_NAME": "b",
        "GIT_COMMITTER_EMAIL": "b@example.com",
    }
    (root / "home").mkdir()
    repo = root / "shop"
    (repo / "src").mkdir(parents=True)
    git(repo, env, "init", "-q")
    for i in range(50):
        (repo / "src" / f"m{i}.py").write_text(f"x = {i}\n")
    (repo / ".gitignore").write_text("node_modules/\n")
    git(repo, env, "add", "-A")
    git(repo, env, "commit", "-q", "-m", "init")
    per_dir = 100
    for i in range(files):
        d = repo / "node_modules" / f"pkg{i // per_dir}"
        if i % per_dir == 0:
            d.mkdir(parents=True)
        (d / f"f{i % per_dir}.js").write_text(f"module.exports = {i};\n")
    return repo, env


def median_ms(xs: list[float]) -> float:
    return statistics.median(xs) * 1000


def one_round(
    *,
    root: Path,
    user: gitrepo.Repo,
    env: dict[str, str],
    tree: str,
    i: int,
    times: dict[str, list[float]],
) -> None:
    """One of each, in turn: bare, linked, copied, set up; and the linked folder's scan."""
    repo_dir = user.root
    path = root / f"bare{i}"
    t0 = time.perf_counter()
    git(repo_dir, env, "worktree", "add", "-q", "--detach", str(path), "HEAD")
    times["bare"].append(time.perf_counter() - t0)
    git(repo_dir, env, "worktree", "remove", "--force", str(path))

    t0 = time.perf_counter()
    wt = worktrees.create(user, "bench", f"P{i}", tree)
    times["plain"].append(time.perf_counter() - t0)
    worktrees.remove(user, wt.root)

    t0 = time.perf_counter()
    wt = worktrees.create(user, "bench", f"L{i}", tree)
    worktreeprep.prepare(user, wt, worktreeprep.Prep(links=("node_modules",)))
    times["link"].append(time.perf_counter() - t0)
    since = time.time_ns()
    t0 = time.perf_counter()
    found = worktreeprep.linked_changes(user.root, ["node_modules"], since, env)
    times["scan"].append(time.perf_counter() - t0)
    assert found == [], found
    t0 = time.perf_counter()
    subprocess.run(["find", "node_modules"], cwd=repo_dir, capture_output=True, check=True)
    times["find"].append(time.perf_counter() - t0)
    worktrees.remove(user, wt.root)

    t0 = time.perf_counter()
    wt = worktrees.create(user, "bench", f"C{i}", tree)
    ready = worktreeprep.prepare(user, wt, worktreeprep.Prep(include=True))
    times["copy"].append(time.perf_counter() - t0)
    assert ready.copied == ["node_modules"], ready.copied
    worktrees.remove(user, wt.root)

    setup = worktreeprep.Prep(setup=("true",), timeout=60)
    t0 = time.perf_counter()
    wt = worktrees.create(user, "bench", f"S{i}", tree)
    done = worktreeprep.run_setup(setup, wt, env, root / f"setup{i}.log")
    times["setup"].append(time.perf_counter() - t0)
    assert done is not None
    assert done.ok
    worktrees.remove(user, wt.root)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--files", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"plan-build wave readiness benchmark ({ROOT})")
    with tempfile.TemporaryDirectory(prefix="plan-build-bench-ready-") as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        repo_dir, env = make_repo(root, args.files)
        print(f"  made {args.files} ignored files in {time.perf_counter() - started:.1f} s")
        fs = subprocess.run(
            ["stat", "-f", "-c", "%T", str(root)], capture_output=True, text=True, check=False
        ).stdout.strip()
        user = gitrepo.discover(repo_dir, env)
        tree = snapshot.worktree_tree(user)
        (repo_dir / ".worktreeinclude").write_text("node_modules/\n")
        times: dict[str, list[float]] = {
            k: [] for k in ("bare", "plain", "link", "copy", "setup", "scan", "find")
        }
        for i in range(args.repeat):  # alternated, so each sees the same machine
            one_round(root=root, user=user, env=env, tree=tree, i=i, times=times)
    bare = median_ms(times["bare"])
    print(
        f"worktree readiness, node_modules of {args.files} files on {fs or '?'} "
        f"(median of {args.repeat}):"
    )
    print(f"  reference: bare git worktree add {bare:.0f} ms")
    for key, words in (
        ("plain", "nothing brought in (plan-build's worktree alone)"),
        ("link", "node_modules linked (symlinkDirectories)"),
        ("copy", "node_modules copied (.worktreeinclude, cp -a --reflink=auto)"),
        ("setup", "a setup command `true` (run_check)"),
    ):
        ms = median_ms(times[key])
        over = "" if key == "plain" else f", {ms - median_ms(times['plain']):+.0f} ms over it"
        print(f"  worktree + {words}: {ms:.0f} ms · ratio {ms / bare:.2f}x{over}")
    scan, find = median_ms(times["scan"]), median_ms(times["find"])
    print(
        f"  linked-folder scope scan after a run: {scan:.0f} ms · one find listing it "
        f"{find:.0f} ms · ratio {scan / find:.2f}x"
    )


if __name__ == "__main__":
    sys.exit(main())
