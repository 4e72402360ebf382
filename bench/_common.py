"""Helpers for the benchmarks: medians of wall-clock runs of whole commands, alternating
runs for ratios, and the generated repositories and review ledgers the benchmarks share."""

from __future__ import annotations

import datetime as dt
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# PLAN_BUILD_BENCH_SRC: time another checkout's package (e.g. the code before a change)
SRC = Path(os.environ.get("PLAN_BUILD_BENCH_SRC") or ROOT / "src").resolve()
for _p in (SRC, ROOT):  # this checkout's package first, even over an editable install elsewhere
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))


def compile_checkout() -> None:
    """Write this checkout's bytecode caches once, as an install does."""
    import compileall

    compileall.compile_dir(str(SRC), quiet=1)


def wall(
    argv: Sequence[str], *, cwd: Path | None = None, env: Mapping[str, str] | None = None
) -> float:
    started = time.perf_counter()
    subprocess.run(
        list(argv),
        cwd=cwd,
        env=dict(env) if env is not None else None,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    return time.perf_counter() - started


def median_ms(argv: Sequence[str], runs: int, **kwargs: object) -> float:
    wall(argv, **kwargs)  # type: ignore[arg-type]  # warm the page cache
    return statistics.median(wall(argv, **kwargs) for _ in range(runs)) * 1000  # type: ignore[arg-type]


def instructions(
    argv: Sequence[str], *, cwd: Path, env: Mapping[str, str]
) -> tuple[int, int] | None:
    """(instructions of the Python process, of it and every child) under valgrind's callgrind:
    a count, not a time, the same run after run whatever else the machine does (None: no
    valgrind here)."""
    import shutil
    import tempfile

    if shutil.which("valgrind") is None:
        return None
    with tempfile.TemporaryDirectory(prefix="pb-callgrind-") as out:
        subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                "--trace-children=yes",
                f"--callgrind-out-file={out}/cg.%p",
                *argv,
            ],
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )
        own = total = 0
        for f in Path(out).iterdir():
            lines = f.read_text(errors="replace").splitlines()
            cmd = next((ln.split()[1:2] for ln in lines if ln.startswith("cmd:")), [])
            summary = next((ln for ln in lines if ln.startswith("summary:")), "summary: 0")
            count = int(summary.split()[1])  # 0: a process that ended before it was counted
            total += count
            own += count if cmd == [argv[0]] else 0  # not git, nor what else it started
    return own, total


def env_with(**extra: str) -> dict[str, str]:
    """The environment for a timed command: this checkout's package, with bytecode caches
    (a user's install has them: without them every run compiles plan-build from source)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH", "")]))
    env.update(extra)
    return env


def timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def cpu_seconds() -> float:
    """CPU time of this process and of its finished children (user + system)."""
    me, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def alternate(fns: Mapping[str, Callable[[], object]], runs: int) -> dict[str, float]:
    """Median wall seconds of each callable (key `name`) and median CPU seconds (key
    `name.cpu`: less swayed by other load), run in turn within each round after one warm-up
    round, so a busy machine slows every one of them alike."""
    for fn in fns.values():
        fn()
    samples: dict[str, list[float]] = {k: [] for k in fns}
    cpu: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(runs):
        for name, fn in fns.items():
            before = cpu_seconds()
            samples[name].append(timed(fn))
            cpu[name].append(cpu_seconds() - before)
    out = {k: statistics.median(v) for k, v in samples.items()}
    out.update({f"{k}.cpu": statistics.median(v) for k, v in cpu.items()})
    return out


def command(argv: Sequence[str], **kwargs: Any) -> Callable[[], float]:
    return lambda: wall(argv, **kwargs)


# --- a large repository: tracked files, some modified, some untracked ----------------------


def body(i: int) -> str:
    return "".join(f"def f_{i}_{k}(x):\n    return x * {k} + {i}\n\n" for k in range(6))


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def build_repo(
    root: Path,
    tracked: int,
    modified: int,
    untracked: int,
    committed: Mapping[str, str] | None = None,
) -> None:
    """`tracked` committed files (and `committed`, e.g. a configuration), every
    (tracked // modified)-th edited, `untracked` new."""
    git(root, "init", "-q")
    git(root, "config", "user.name", "bench")
    git(root, "config", "user.email", "bench@example.com")
    for i in range(tracked):
        d = root / f"pkg{i // 200:03d}"
        d.mkdir(exist_ok=True)
        (d / f"mod{i:05d}.py").write_text(body(i))
    for name, text in (committed or {}).items():
        (root / name).write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "generated")
    for i in range(0, tracked, tracked // modified) if modified else ():
        p = root / f"pkg{i // 200:03d}" / f"mod{i:05d}.py"
        p.write_text(p.read_text() + f"# modified {i}\n")
    if untracked:
        (root / "new").mkdir()
    for i in range(untracked):
        (root / "new" / f"untracked{i:04d}.py").write_text(body(-i))


def start_session(py: str, root: Path, env: Mapping[str, str]) -> str:
    """`plan-build baseline` in `root`: the new session's id."""
    out = subprocess.run(
        [py, "-m", "plan_build", "baseline"],
        cwd=root,
        env=dict(env),
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


# --- a review workflow whose ledger has N rows --------------------------------------------

PER_ROUND = 50
SEVERITIES = ("CRITICAL", "HIGH", "MEDIUM", "LOW")
NOW = dt.datetime(2026, 11, 30, 12, 0, 0, tzinfo=dt.UTC)
WF_ID = "20261130-120000-abcdef"


def finding_ids() -> list[str]:
    return [f"{SEVERITIES[i % 4]}-{i // 4 + 1}" for i in range(PER_ROUND)]


def review_text() -> str:
    return "".join(
        f"[{fid}] finding {fid} in src/module_{fid}.py needs attention\n" for fid in finding_ids()
    )


def decisions_text(decision: str) -> str:
    return "".join(f"### {fid}\nDecision: {decision}\n\n" for fid in finding_ids())


def build_ledger(path: Path, rows: int) -> int:
    """`rows` rows in rounds of 50, in sync with FIX decisions. Returns the last round."""
    from plan_build.review.ledger import HEADER

    rounds = rows // PER_ROUND
    lines = [HEADER]
    for rnd in range(1, rounds + 1):
        for fid in finding_ids():
            sev = fid.split("-", 1)[0]
            lines.append(
                f"plan\tplan\t{rnd}\tcodex\t{fid}\t{sev}\tfinding {fid} in src/module_{fid}.py "
                f"needs attention\tFIX\tFIX\tyes\tagreed-fix\t2026-11-30T11:00:00Z\n"
            )
    path.write_text("".join(lines))
    return rounds


def build_review_repo(base: Path, rows: int) -> tuple[Path, Any]:
    """A git repository holding one plan-review workflow whose ledger has `rows` rows."""
    from plan_build.review.layout import WorkflowDir
    from plan_build.review.workflowfile import create, save

    repo = base / f"repo-{rows}"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    wdir = WorkflowDir(repo, WF_ID)
    wdir.artifacts.mkdir(parents=True)
    last = build_ledger(wdir.ledger, rows)
    wf = create(wdir, NOW, "bench")
    wf.round = last
    wdir.plan.write_text("# plan\n")
    wdir.review("plan", last).write_text(review_text())
    wdir.findings("plan", last).write_text(decisions_text("FIX"))
    save(wdir, wf, NOW)
    return repo, wdir
