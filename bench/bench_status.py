"""`status` on one screen (issue 23) against `status` as it was (issue 15's warm path).

The same repository for both: 20k tracked files (2k modified, 500 new), 50 files of session
work, a review workflow in its implementation phase (1,000 ledger rows, 50 findings in the
current round, every one decided), a TASKS.md of 50 tasks with dispatch state, and a verify
record. The code before comes from `git archive` of a commit of this repository (default: the
merge base with main), so both run as the same kind of process in the same rounds.

    figure                                     reference                      goal
    status as a process, warm (kept index)     status before, same repo       <= 1.2x
    status --json, warm                        status --json before           <= 1.2x
    status through the Invoke program          status before                  (shown)
    instructions of each (callgrind)           the same of status before      (shown)

`plan-build status` is answered without Invoke (docs/adr/0161); `-d status`, like `inv status`
in a checkout, runs through the program, and its row shows what the view itself costs. The
instruction counts (with --instructions, where valgrind is installed) are the same run after
run: the figure to trust when the machine is noisy.

Nothing is asserted. Run: python bench/bench_status.py [--quick] [--before REF] [--instructions]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from _common import (
    NOW,
    ROOT,
    SRC,
    alternate,
    body,
    build_ledger,
    build_repo,
    command,
    compile_checkout,
    decisions_text,
    env_with,
    instructions,
    review_text,
    start_session,
)

TRACKED, MODIFIED, UNTRACKED, SESSION_FILES, TASKS = 20_000, 2_000, 500, 50, 50


def old_source(ref: str, into: Path) -> Path:
    """The package as it was at `ref` (read from git objects; no checkout is touched)."""
    archive = into / "before.tar"
    with archive.open("wb") as fh:
        subprocess.run(["git", "archive", ref, "src"], cwd=ROOT, stdout=fh, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    compileall.compile_dir(str(into / "src"), quiet=1)
    return into / "src"


def tasks_md(n: int) -> str:
    parts = ["# Tasks\n\n"]
    for i in range(1, n + 1):
        status = "Complete" if i < n // 2 else ("Review" if i == n // 2 else "Pending")
        deps = f"TASK-{i - 1:03d}" if i > 1 else "none"
        parts.append(
            f"## TASK-{i:03d}: Task number {i}\n\nStatus: {status}\nDependencies: {deps}\n\n"
            f"### Objective\nDo {i}.\n\n### Scope\n- `pkg{i:03d}/**`\n\n### Prompt\nDo it.\n\n"
            "### Acceptance criteria\n- done\n\n### Tests\nOne.\n\n"
            f"### Verification\n```sh\ntrue\n```\n\n"
        )
    return "".join(parts)


def session_state(root: Path, sid: str) -> None:
    """A workflow in its implementation phase, TASKS.md with dispatch state, a verify record."""
    sys.path.insert(0, str(SRC))
    from plan_build.review.layout import WorkflowDir
    from plan_build.review.workflowfile import create, save

    wdir = WorkflowDir(root, "20261130-120000-abcdef")
    wdir.artifacts.mkdir(parents=True)
    last = build_ledger(wdir.ledger, 1000)
    wf = create(wdir, NOW, "bench")
    wf.phase, wf.round = "implement", last
    wdir.plan.write_text("# plan\n")
    wdir.review("implement", last).write_text(review_text())
    wdir.findings("implement", last).write_text(decisions_text("FIX"))
    save(wdir, wf, NOW)
    (root / "TASKS.md").write_text(tasks_md(TASKS))
    state = root / ".git" / "plan-build"
    (state / "dispatch" / "tasks").mkdir(parents=True, exist_ok=True)
    for i in range(1, TASKS // 2 + 1):
        last_run = {"dispatch": f"d{i}", "status": "Review", "reason": "verified", "at": "2026"}
        (state / "dispatch" / "tasks" / f"TASK-{i:03d}.json").write_text(
            json.dumps({"last": last_run})
        )
    record = {"ok": True, "when": "2026-11-30T12:00:00Z", "change": {"tree": "0" * 40}}
    (state / "sessions" / sid / "verify.json").write_text(json.dumps(record))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds, 5k files")
    parser.add_argument("--before", default="", help="the commit to compare with")
    parser.add_argument(
        "--instructions", action="store_true", help="also count instructions (valgrind)"
    )
    args_ns = parser.parse_args()
    runs = 7 if args_ns.quick else 15
    tracked = 5_000 if args_ns.quick else TRACKED
    before = (
        args_ns.before
        or subprocess.run(
            ["git", "merge-base", "HEAD", "main"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    compile_checkout()
    py = sys.executable
    load = os.getloadavg()
    print(
        f"status: ratio of medians of {runs} alternating rounds; load average {load[0]:.1f} "
        f"{load[1]:.1f} {load[2]:.1f} on {os.cpu_count()} cores; before = {before[:12]}"
    )
    with tempfile.TemporaryDirectory(prefix="pb-bench-status-") as tmp_name:
        tmp = Path(tmp_name)
        (tmp / "home").mkdir()
        old = old_source(before, tmp)
        root = tmp / "big"
        root.mkdir()
        build_repo(root, tracked, tracked // 10, UNTRACKED)  # the user's own edits, kept apart
        env = env_with(HOME=str(tmp / "home"))
        sid = start_session(py, root, env)
        for i in range(SESSION_FILES):
            (root / f"session{i:02d}.py").write_text(body(1000 + i))
        session_state(root, sid)
        new_env = {**env, "PLAN_BUILD_SESSION": sid}
        old_env = {**new_env, "PYTHONPATH": str(old)}
        pb = [py, "-m", "plan_build"]
        argv = [*pb, "status"]
        check = subprocess.run(
            argv, cwd=root, env=new_env, capture_output=True, text=True, check=True
        )
        print("  the screen measured:")
        for line in check.stderr.splitlines():
            print(f"    | {line}")
        rows = (
            ("status", ["status"], True),
            ("status --json", ["status", "--json"], True),
            ("status via the program", ["-d", "status"], False),
        )
        for label, args, goal in rows:
            before_args = [a for a in args if a != "-d"]
            med = alternate(
                {
                    "before": command([*pb, *before_args], cwd=root, env=old_env),
                    "after": command([*pb, *args], cwd=root, env=new_env),
                },
                runs,
            )
            ratio = med["after"] / med["before"]
            cpu = med["after.cpu"] / max(med["before.cpu"], 1e-9)
            verdict = f"goal <= 1.2x: {'met' if ratio <= 1.2 else 'OVER'}" if goal else "shown"
            print(
                f"  {label + ', warm, as a process':<44} {med['after'] * 1000:7.0f} ms  "
                f"before {med['before'] * 1000:7.0f} ms  {ratio:5.2f}x  [cpu {cpu:.2f}x]  "
                f"({verdict})",
                flush=True,
            )
            if not args_ns.instructions:
                continue
            old_n = instructions([*pb, *before_args], cwd=root, env=old_env)
            new_n = instructions([*pb, *args], cwd=root, env=new_env)
            if old_n is None or new_n is None:
                print("    instructions: valgrind is not installed here")
                continue
            print(
                f"    instructions: python {new_n[0] / 1e6:6.0f} M  before {old_n[0] / 1e6:6.0f} M"
                f"  {new_n[0] / old_n[0]:5.2f}x · with git {new_n[1] / 1e6:6.0f} M  before "
                f"{old_n[1] / 1e6:6.0f} M  {new_n[1] / old_n[1]:5.2f}x",
                flush=True,
            )


if __name__ == "__main__":
    main()
