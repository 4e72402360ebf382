"""Wave benchmarks (`plan-build dispatch --wave`): do independent tasks really run side by side,
and what does a worktree cost?

Prints each figure beside its reference, measured in the same run; nothing here asserts.
Run: python bench/bench_wave.py [--tasks 4] [--codex-seconds 2] [--files 20000]

Figures:
- a wave of N independent tasks whose stub Codex takes S seconds each, against the longest
  single task of the wave (target: < 1.5x, not Nx), run with --jobs N
- plan-build's own time per task in that wave beyond Codex and the worktree's creation
  (target: < 0.5 s)
- creating one task worktree (git worktree add --no-checkout + read-tree of the user's
  snapshot) at F tracked files, against a bare `git worktree add --detach` (target: <= 1.5x);
  and the one snapshot of the user's work tree the wave takes before it starts
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

from _common import ROOT, SRC

from plan_build.core import gitrepo, snapshot
from plan_build.dispatch import worktrees

TASK = """\
## TASK-{n:03d}: Part {n}

Status: Pending
Dependencies: none

### Objective
Part {n}.

### Scope
- `src/part{n}.py`

### Prompt
Write part {n} (part-{n}).

### Acceptance criteria
- done

### Tests
None.

### Verification
```sh
true
```

"""

STUB = """#!{python}
import json, pathlib, re, sys, time
prompt = sys.argv[-1]
n = re.search(r"\\(part-(\\d+)\\)", prompt).group(1)
time.sleep({sleep})
pathlib.Path(f"src/part{{n}}.py").write_text("done\\n")
pathlib.Path(sys.argv[sys.argv.index("-o") + 1]).write_text("done")
for e in ({{"type": "thread.started", "thread_id": "bench"}},
          {{"type": "item.completed", "item": {{"type": "agent_message", "text": "done"}}}},
          {{"type": "turn.completed", "usage": {{"input_tokens": 1, "output_tokens": 1}}}}):
    print(json.dumps(e))
"""


def git(cwd: Path, env: dict[str, str], *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def make_repo(root: Path, tasks: int, sleep: float, files: int = 0) -> tuple[Path, dict[str, str]]:
    env = dict(os.environ)
    env.update(
        HOME=str(root / "home"),
        GIT_AUTHOR_NAME="b",
        GIT_AUTHOR_EMAIL="b@b.invalid",
        GIT_COMMITTER_NAME="b",
        GIT_COMMITTER_EMAIL="b@b.invalid",
        PLAN_BUILD_MEMORY_MODE="degraded",
        PYTHONPATH=str(SRC),
    )
    (root / "home").mkdir()
    repo = root / "repo"
    (repo / "src").mkdir(parents=True)
    for i in range(files):
        d = repo / "data" / f"d{i // 500}"
        if i % 500 == 0:
            d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i}.txt").write_text(f"{i}\n")
    for n in range(2, 2 + tasks):
        (repo / "src" / f"part{n}.py").write_text("todo\n")
    plan = "# Tasks\n\n" + "".join(TASK.format(n=n) for n in range(2, 2 + tasks))
    (repo / "TASKS.md").write_text(plan)
    (repo / ".agentmemory-project").write_text("bench/wave\n")
    git(repo, env, "init", "-q")
    git(repo, env, "add", "-A")
    git(repo, env, "commit", "-qm", "bench")
    stub = root / "bin" / "codex"
    stub.parent.mkdir()
    stub.write_text(STUB.format(python=sys.executable, sleep=sleep))
    stub.chmod(0o755)
    env["PATH"] = f"{stub.parent}{os.pathsep}{env['PATH']}"
    return repo, env


def plan_build(repo: Path, env: dict[str, str], *args: str) -> tuple[float, dict[str, object]]:
    started = time.perf_counter()
    r = subprocess.run(
        [sys.executable, "-m", "plan_build", "dispatch", *args, "--json"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - started
    if r.returncode != 0:
        print(r.stderr)
        raise SystemExit(f"plan-build dispatch {' '.join(args)} failed")
    return seconds, json.loads(r.stdout)


def bench_wave(tasks: int, sleep: float) -> None:
    with tempfile.TemporaryDirectory(prefix="plan-build-bench-wave-") as tmp:
        repo, env = make_repo(Path(tmp), tasks, sleep)
        # the reference: each task alone (`dispatch TASK-ID`), in a copy of the same plan
        singles = []
        for n in range(2, 2 + tasks):
            seconds, _ = plan_build(repo, env, f"TASK-{n:03d}")
            singles.append(seconds)
        subprocess.run(["git", "checkout", "-q", "--", "."], cwd=repo, env=env, check=True)
        for f in (repo / ".git" / "plan-build" / "dispatch" / "tasks").glob("*.json"):
            f.unlink()
        wave, out = plan_build(repo, env, "--wave", "--jobs", str(tasks))
    runs = out["tasks"]
    assert isinstance(runs, list)
    longest = max(singles)
    print(f"cores: {os.cpu_count()}; {tasks} tasks, stub Codex {sleep:g} s each, --jobs {tasks}")
    print(
        f"  wave of {tasks}: {wave:.2f} s · longest single dispatch {longest:.2f} s · "
        f"ratio {wave / longest:.2f}x (target < 1.5x; run one after another: {sum(singles):.2f} s)"
    )
    overheads = []
    for r in runs:
        s = r["seconds"]
        overheads.append(s["total"] - s["codex"] - s["worktree"])
        print(
            f"    {r['task']}: {r['outcome']} · total {s['total']:.2f} s · codex "
            f"{s['codex']:.2f} s · worktree {s['worktree']:.2f} s · "
            f"plan-build {s['total'] - s['codex'] - s['worktree']:.2f} s"
        )
    print(
        f"  plan-build per task beyond Codex and the worktree: median "
        f"{statistics.median(overheads):.2f} s, max {max(overheads):.2f} s (target < 0.5 s)"
    )


def bench_worktree(files: int, repeat: int = 5) -> None:
    with tempfile.TemporaryDirectory(prefix="plan-build-bench-wt-") as tmp:
        root = Path(tmp)
        repo_dir, env = make_repo(root, 1, 0, files)
        repo = gitrepo.discover(repo_dir, env)
        started = time.perf_counter()
        tree = snapshot.worktree_tree(repo)
        snap = time.perf_counter() - started
        ours, bare = [], []
        for i in range(repeat):  # alternate, so both see the same machine
            started = time.perf_counter()
            made = worktrees.create(repo, "bench", f"T{i}", tree)
            ours.append(time.perf_counter() - started)
            worktrees.remove(repo, made.root)
            path = root / f"bare{i}"
            started = time.perf_counter()
            git(repo_dir, env, "worktree", "add", "--detach", str(path), "HEAD")
            bare.append(time.perf_counter() - started)
            git(repo_dir, env, "worktree", "remove", "--force", str(path))
        o, b = statistics.median(ours), statistics.median(bare)
        print(f"worktree creation at {files} tracked files (median of {repeat}):")
        print(
            f"  plan-build's {o * 1000:.0f} ms · bare git worktree add {b * 1000:.0f} ms · "
            f"ratio {o / b:.2f}x (target <= 1.5x)"
        )
        print(f"  the wave's one snapshot of the user's work tree: {snap * 1000:.0f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tasks", type=int, default=4)
    ap.add_argument("--codex-seconds", type=float, default=2.0)
    ap.add_argument("--files", type=int, default=20_000)
    args = ap.parse_args()
    print(f"plan-build wave benchmarks ({ROOT})")
    bench_wave(args.tasks, args.codex_seconds)
    bench_worktree(args.files)


if __name__ == "__main__":
    main()
