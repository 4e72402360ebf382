"""Dispatch benchmarks: plan-build's own cost around a Codex run.

Prints each figure beside a reference (what a user would notice); nothing here asserts on
time. Run: python bench/bench_dispatch.py [--files N] [--tasks N]

Figures:
- cold import of the dispatch step (paid by every `plan-build dispatch`)
- parsing and linting a large TASKS.md, and splicing a status and an evidence block into it
- reading a long Codex --json event stream; the secret scan over a large prompt
- the work-tree snapshot behind every scope check, in a repository of N files
- a whole `plan-build dispatch` with an instant stub Codex: plan-build's overhead per task
- the ignored-file snapshot (stat level) with a gitignored node_modules/ of M files, alone and
  as time added to a whole dispatch
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
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from plan_build.core import gitrepo, redact, snapshot  # noqa: E402
from plan_build.dispatch import taskfile, telemetry  # noqa: E402

TASK = """\
## TASK-{n:03d}: Task number {n}

Status: {status}
Dependencies: {deps}

### Objective
Do part {n} of the work, described in a paragraph of ordinary length so that parsing has
something to chew on, like a real plan would.

### Scope
- `src/part{n}/**`
- `tests/test_part{n}.py`

### Context
Interfaces and conventions for part {n}.

### Prompt
````markdown
Implement part {n}.
## Steps
1. Write the code.
2. Write the tests.
````

### Acceptance criteria
- part {n} works

### Tests
Unit tests for part {n}.

### Verification
```sh
python -m pytest -q tests/test_part{n}.py
ruff check src/part{n}
```

### CodeRabbit
Not reviewed yet.

### Evidence
None yet.

"""


def plan(tasks: int) -> str:
    parts = ["# Tasks\n\nA long plan.\n\n"]
    for n in range(1, tasks + 1):
        status = "Complete" if n < tasks // 2 else "Pending"
        deps = f"TASK-{n - 1:03d}" if n > 1 else "none"
        parts.append(TASK.format(n=n, status=status, deps=deps))
    return "".join(parts)


def timed(fn: Callable[[], object], repeat: int = 7) -> float:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def report(name: str, seconds: float, reference: str) -> None:
    print(f"{name:<58} {seconds * 1000:9.1f} ms   (reference: {reference})")


def report_ratio(name: str, seconds: float, limit: float) -> None:
    """A figure beside its target, as a ratio (below 1.00 meets it)."""
    print(
        f"{name:<58} {seconds * 1000:9.1f} ms   (target < {limit * 1000:.0f} ms: "
        f"ratio {seconds / limit:.2f})"
    )


def bench_import() -> None:
    code = (
        "import time; t = time.perf_counter(); import plan_build.dispatch.runner; "
        "print(time.perf_counter() - t)"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    runs = [
        float(
            subprocess.run(
                [sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True
            ).stdout
        )
        for _ in range(5)
    ]
    report("cold import of plan_build.dispatch.runner", statistics.median(runs), "< 150 ms")


def bench_taskfile(tasks: int) -> None:
    text = plan(tasks)
    size = len(text.encode()) // 1024
    report(
        f"parse + lint TASKS.md ({tasks} tasks, {size} KiB)",
        timed(lambda: taskfile.parse(text)),
        "< 250 ms; once per dispatch and per `plan-build tasks`",
    )
    middle = f"TASK-{tasks // 2:03d}"

    def splice() -> None:
        out = taskfile.with_status(text, middle, "In Progress")
        taskfile.with_block(out, middle, "bench", "Outcome: Review\n- Attempt 1\n")

    report("set status + write evidence block (two parses)", timed(splice), "< 500 ms")


def bench_events() -> None:
    line = json.dumps(
        {
            "type": "item.completed",
            "item": {
                "id": "i",
                "type": "command_execution",
                "command": "pytest",
                "status": "completed",
            },
        }
    )
    stream = "\n".join(
        [line] * 10_000 + [json.dumps({"type": "turn.completed", "usage": {"input_tokens": 1}})]
    )
    in_memory = timed(lambda: telemetry.parse_events(stream))
    report("read a 10,000-event Codex --json stream", in_memory, "< 100 ms")
    with tempfile.TemporaryDirectory(prefix="plan-build-bench-") as tmp:
        path = Path(tmp) / "events.jsonl"
        path.write_text(stream, encoding="utf-8")
        from_file = timed(lambda: telemetry.parse_file(path))
        big = Path(tmp) / "big.jsonl"
        output = json.dumps({"type": "item.completed", "item": {"text": "x" * 10_000}}) + "\n"
        big.write_text(output * 2_000 + stream, encoding="utf-8")
        import tracemalloc

        tracemalloc.start()
        telemetry.parse_file(big)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        size = big.stat().st_size
    print(
        f"{'peak memory reading a 20 MB stream from its file':<58} "
        f"{peak / 1024:9.0f} KiB (beside the file's {size / 1024:.0f} KiB: ratio "
        f"{peak / max(size, 1):.3f})"
    )
    # dispatch and review read the stream from its file a line at a time (ADR 0175)
    print(
        f"{'the same stream read from its file, a line at a time':<58} "
        f"{from_file * 1000:9.1f} ms   (beside the in-memory read: ratio "
        f"{from_file / in_memory:.2f})"
    )


def bench_redact() -> None:
    prompt = (
        "A line of an ordinary prompt with paths src/app.py and a hash "
        "4b825dc642cb6eb9a060e54bf8d69288fbee4904.\n"
    ) * 1000
    redact.scan("warm up", {})
    report(
        f"secret scan of a {len(prompt) // 1024} KiB prompt",
        timed(lambda: redact.scan(prompt, {}), 3),
        "< 500 ms; once per prompt",
    )


def make_repo(root: Path, files: int) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        HOME=str(root / "home"),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_AUTHOR_NAME="Bench",
        GIT_AUTHOR_EMAIL="bench@example.com",
        GIT_COMMITTER_NAME="Bench",
        GIT_COMMITTER_EMAIL="bench@example.com",
        PLAN_BUILD_MEMORY_MODE="degraded",
    )
    (root / "home").mkdir()
    repo = root / "repo"
    for i in range(files):
        p = repo / f"pkg{i % 40}" / f"mod{i}.py"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"VALUE = {i}\n")
    (repo / "src").mkdir()
    (repo / "src" / "app.py").write_text("def view():\n    return []\n")
    text = (
        plan(3)
        .replace("src/part2/**", "src/app.py")
        .replace("python -m pytest -q tests/test_part2.py\nruff check src/part2", "true")
    )
    text = text.replace(
        "Status: Pending\nDependencies: TASK-001", "Status: Pending\nDependencies: none", 1
    )
    (repo / "TASKS.md").write_text(text)
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "bench"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True)
    stub = root / "bin" / "codex"
    stub.parent.mkdir()
    events = "".join(
        json.dumps(e) + "\n"
        for e in (
            {"type": "thread.started", "thread_id": "bench"},
            {"type": "item.completed", "item": {"type": "agent_message", "text": "done"}},
            {"type": "turn.completed", "usage": {"input_tokens": 1, "output_tokens": 1}},
        )
    )
    stub.write_text(
        f"#!{sys.executable}\nimport sys, pathlib\n"
        "pathlib.Path('src/app.py').write_text('fixed\\n')\n"
        "out = sys.argv[sys.argv.index('-o') + 1]\npathlib.Path(out).write_text('done')\n"
        f"sys.stdout.write({events!r})\n"
    )
    stub.chmod(0o755)
    env["PATH"] = f"{stub.parent}{os.pathsep}{env['PATH']}"
    env["PYTHONPATH"] = str(ROOT / "src")
    return env


def bench_repo(files: int) -> None:
    with tempfile.TemporaryDirectory(prefix="plan-build-bench-") as tmp:
        root = Path(tmp)
        env = make_repo(root, files)
        repo_dir = root / "repo"
        repo = gitrepo.discover(repo_dir, env)  # its git calls run in `env`
        report(
            f"work-tree snapshot ({files} files; two per attempt)",
            timed(lambda: snapshot.worktree_tree(repo), 5),
            "< 300 ms",
        )
        report(
            f"whole dispatch, instant Codex, verification `true` ({files} files)",
            dispatch_seconds(repo_dir, env),
            "< 3 s of plan-build overhead per task",
        )


def fill_node_modules(repo: Path, files: int) -> None:
    for i in range(files):
        p = repo / "node_modules" / f"pkg{i // 50}" / "lib" / f"f{i % 50}.js"
        if i % 50 == 0:
            p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"module.exports = {i};\n")


def dispatch_seconds(repo_dir: Path, env: dict[str, str], runs: int = 3) -> float:
    samples = []
    for _ in range(runs):
        subprocess.run(["git", "checkout", "-q", "--", "."], cwd=repo_dir, env=env, check=True)
        state = repo_dir / ".git" / "plan-build" / "dispatch" / "tasks"
        for f in state.glob("*.json") if state.is_dir() else []:
            f.unlink()
        started = time.perf_counter()
        r = subprocess.run(
            [sys.executable, "-m", "plan_build", "dispatch", "TASK-002"],
            check=False,
            cwd=repo_dir,
            env=env,
            capture_output=True,
            text=True,
        )
        samples.append(time.perf_counter() - started)
        if r.returncode != 0:
            print(r.stderr)
            raise SystemExit("the benchmark dispatch failed")
    return statistics.median(samples)


def bench_ignored(node_modules: int) -> None:
    """Issue 11: the ignored-path snapshot must add < 0.5 s to a dispatch."""
    with tempfile.TemporaryDirectory(prefix="plan-build-bench-") as tmp:
        root = Path(tmp)
        env = make_repo(root, 200)
        repo_dir = root / "repo"
        without = dispatch_seconds(repo_dir, env)
        (repo_dir / ".gitignore").write_text("node_modules/\n")
        subprocess.run(["git", "add", ".gitignore"], cwd=repo_dir, env=env, check=True)
        subprocess.run(["git", "commit", "-qm", "ignore"], cwd=repo_dir, env=env, check=True)
        fill_node_modules(repo_dir, node_modules)
        repo = gitrepo.discover(repo_dir, env)
        first = snapshot.ignored_files(repo)
        before = timed(lambda: snapshot.ignored_files(repo), 5)
        after = timed(lambda: snapshot.changed_ignored(repo, first), 5)
        walk = timed(
            lambda: subprocess.run(
                ["find", "node_modules", "-type", "f"],
                cwd=repo_dir,
                check=True,
                stdout=subprocess.DEVNULL,
            ),
            5,
        )
        report_ratio(
            f"ignored snapshot before + after (node_modules/ of {node_modules} files)",
            before + after,
            0.5,
        )
        print(
            f"{'  beside a bare `find node_modules -type f` (this machine now)':<58} "
            f"{walk * 1000:9.1f} ms   (ratio {(before + after) / walk:.2f})"
        )
        with_modules = dispatch_seconds(repo_dir, env)
        report_ratio(
            f"dispatch time added by a {node_modules}-file ignored node_modules/",
            max(0.0, with_modules - without),
            0.5,
        )
        report_ratio("whole dispatch, instant Codex (plan-build overhead)", without, 1.5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--node-modules", type=int, default=50_000)
    parser.add_argument(
        "--only-ignored", action="store_true", help="run only the ignored-file figures"
    )
    args = parser.parse_args()
    print(
        f"plan-build dispatch benchmarks · python {sys.version.split()[0]} · {os.cpu_count()} cpus"
    )
    if not args.only_ignored:
        bench_import()
        bench_taskfile(args.tasks)
        bench_events()
        bench_redact()
        bench_repo(args.files)
    bench_ignored(args.node_modules)


if __name__ == "__main__":
    main()
