"""Each call of plan-build's Claude Code hooks (issue 31), as Claude makes it: the settings
layer's command through `sh -c`, Claude's JSON on stdin, to exit.

    figure                                         reference                  goal
    pre-bash: an ordinary command (allowed)        50 ms per hook call        <= 1.0x
    pre-bash: `git commit` (refused)               50 ms                      <= 1.0x
    pre-bash: a 4 KiB compound command             50 ms                      <= 1.0x
    pre-bash: `bash ship.sh` (a script is read)    50 ms                      <= 1.0x
    pre-bash: a heredoc note naming a commit        50 ms                      <= 1.0x
    pre-bash: `git checkout -- .` (refused)         50 ms                      <= 1.0x
    pre-edit, config                               50 ms                      <= 1.0x
    post-edit (architect, TASKS.md of 50 tasks)    50 ms                      <= 1.0x
    post-bash (architect): no write / a write      50 ms                      <= 1.0x
    checkpoint: an unchanged tree (a small repo)   50 ms                      <= 1.0x
    the floor: `sh -c` running `python -I -S -c pass`, the same way   (shown beside each)
    false refusals of tests/data/ordinary_commands.txt   the same count by REF's shellgate

Every hook call sits in front of a tool call the model waits for. Nothing is asserted.
Run: python bench/bench_hooks.py [--quick] [--against REF]   (REF: a git ref, default main;
PLAN_BUILD_BENCH_SRC=<another checkout's src> times that code instead)
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import compile_checkout

from plan_build.startup import claudelayer

REFERENCE_MS = 50.0
NOTE = "cat > notes.md <<'EOF'\nremember: git commit after review\nEOF"


def false_refusals(ref: str) -> None:
    """The ordinary corpus judged by this checkout's shellgate and by `ref`'s."""
    from tests.test_shellgate_corpus import load_corpus, make_project

    from plan_build.startup import shellgate

    commands = load_corpus()
    with tempfile.TemporaryDirectory() as tmp:
        cwd = str(make_project(Path(tmp)))
        now = sum(1 for c in commands if shellgate.refusal(c, cwd=cwd))
        old = subprocess.run(
            ["git", "show", f"{ref}:src/plan_build/startup/shellgate.py"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            check=False,
        )
        if old.returncode != 0:
            print(f"false refusals: {now} of {len(commands)} ordinary commands ({ref}: unknown)")
            return
        (Path(tmp) / "old_shellgate.py").write_text(old.stdout)
        spec = importlib.util.spec_from_file_location(
            "old_shellgate", Path(tmp) / "old_shellgate.py"
        )
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        before = sum(1 for c in commands if module.refusal(c, cwd=cwd))
    print(f"false refusals of {len(commands)} ordinary commands: {now} (at {ref}: {before})")


def call(command: str, payload: str, env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(
        ["sh", "-c", command],
        input=payload.encode(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        check=False,
    )
    return (time.perf_counter() - started) * 1000


def tasks_md(n: int) -> str:
    parts = ["# Tasks\n\n"]
    for i in range(1, n + 1):
        status = "In Progress" if i == n else "Complete"
        parts.append(
            f"## TASK-{i:03d}: Task {i}\n\nStatus: {status}\nDependencies: none\n\n"
            f"### Objective\nDo {i}.\n\n### Scope\n- `pkg{i:03d}/**`\n\n### Prompt\nDo it.\n\n"
            "### Acceptance criteria\n- done\n\n### Tests\nOne.\n\n"
            "### Verification\n```sh\ntrue\n```\n\n"
        )
    return "".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--against", default="main", help="git ref for the false-refusal count")
    opts = parser.parse_args()
    runs = 7 if opts.quick else 31
    compile_checkout()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "TASKS.md").write_text(tasks_md(50))
        state = root / "state"  # live scope's cache of the scopes, as under .git/plan-build
        (state / "claude").mkdir(parents=True)
        (root / "ship.sh").write_text("#!/bin/sh\n" + "echo step\n" * 200 + "git push\n")
        subprocess.run(["git", "init", "-q", str(root)], check=True)  # for the checkpoint hook
        env = {"PATH": "/usr/bin:/bin", claudelayer.HOOK_ENV: claudelayer.hook_program()}
        env["CLAUDE_PROJECT_DIR"] = str(root)
        long = " && ".join(f"grep -n 'pattern {i}' src/file{i}.py" for i in range(100))

        def bash(cmd: str) -> str:
            return json.dumps({"tool_name": "Bash", "tool_input": {"command": cmd}, "cwd": tmp})

        edit = json.dumps({"tool_input": {"file_path": f"{tmp}/pkg050/a.py"}, "cwd": tmp})
        cases = {
            "pre-bash, `git status` (allowed)": ("pre-bash", "plan", bash("git status")),
            "pre-bash, `git commit -m x` (refused)": ("pre-bash", "plan", bash("git commit -m x")),
            f"pre-bash, {len(long) // 1024} KiB compound command": ("pre-bash", "plan", bash(long)),
            "pre-bash, `bash ship.sh` (script read)": ("pre-bash", "plan", bash("bash ship.sh")),
            "pre-bash, a heredoc note (allowed)": ("pre-bash", "plan", bash(NOTE)),
            "pre-bash, `git checkout -- .` (refused)": (
                "pre-bash",
                "plan",
                bash("git checkout -- ."),
            ),
            "pre-edit": ("pre-edit", "plan", edit),
            "config (refused)": ("config", "plan", json.dumps({"source": "local_settings"})),
            "post-edit, architect, 50 tasks": ("post-edit", "architect", edit),
            "post-bash `pytest -q` (writes nothing)": ("post-bash", "architect", bash("pytest -q")),
            "post-bash `echo > x`, architect, 50 tasks": (
                "post-bash",
                "architect",
                bash("echo 1 > pkg050/a.py"),
            ),
        }
        cases["checkpoint, unchanged tree (small repo)"] = ("checkpoint", "plan", bash("ls"))
        floor_cmd = shlex.join([sys.executable, "-I", "-S", "-c", "pass"])
        floor: list[float] = []
        samples: dict[str, list[float]] = {k: [] for k in cases}
        for round_ in range(runs + 1):  # round 0 warms the page cache
            f = call(floor_cmd, "", env)
            got = {
                name: call(claudelayer.hook_command(event, mode=mode, state=state), payload, env)
                for name, (event, mode, payload) in cases.items()
            }
            if round_:
                floor.append(f)
                for name, ms in got.items():
                    samples[name].append(ms)
    floor_ms = statistics.median(floor)
    print(f"hook calls, median of {runs} (reference {REFERENCE_MS:g} ms per call)")
    print(f"  {'call':44} {'ms':>7} {'x 50 ms':>8} {'floor ms':>9}")
    for name, values in samples.items():
        ms = statistics.median(values)
        print(f"  {name:44} {ms:7.1f} {ms / REFERENCE_MS:7.2f}x {floor_ms:9.1f}")
    false_refusals(opts.against)


if __name__ == "__main__":
    main()
