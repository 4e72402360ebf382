"""Preflight concurrency: every stub probe delayed 300 ms; the whole `plan-build preflight`
(process start to report) should stay within 1.5x (slowest single probe + startup).
The sequential figure is the sum of the probes' own times as the report records them.

Run: python bench/bench_preflight.py [runs]
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, env_with, median_ms
from tests.support.memserver import MemoryServer

DELAY = 0.3
RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 7


def setup(tmp: Path) -> tuple[Path, dict[str, str]]:
    repo = tmp / "repo"
    repo.mkdir()
    git = ["git", "-c", "user.name=b", "-c", "user.email=b@example.com"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    (repo / ".agentmemory-project").write_text("github.com/bench/repo\n")
    subprocess.run([*git, "add", "."], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "x"], cwd=repo, check=True)
    stub_bin, stub_home = tmp / "bin", tmp / "stub-home"
    stub_bin.mkdir()
    stub_home.mkdir()
    for tool in ("claude", "codex", "coderabbit", "auggie"):
        exe = stub_bin / tool
        exe.write_text(
            f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(ROOT)!r})\n"
            f"from tests.support.stubtool import main\nmain({tool!r})\n"
        )
        exe.chmod(0o755)
        (stub_home / f"{tool}.json").write_text(json.dumps([]))
    # every stub call sleeps DELAY before answering with its default (real-shaped) output
    for tool in ("claude", "codex", "coderabbit", "auggie"):
        rules = [{"match": ["--version"], "sleep": DELAY, "stdout": "1.0.0\n"}]
        if tool in ("claude", "codex"):
            from tests.support import stubtool

            listing = (
                json.dumps(stubtool.CLAUDE_PLUGINS)
                if tool == "claude"
                else json.dumps(stubtool.CODEX_PLUGINS)
            )
            rules.append({"match": ["plugin", "list", "--json"], "sleep": DELAY, "stdout": listing})
        (stub_home / f"{tool}.json").write_text(json.dumps(rules))
    release = tmp / "release"
    shutil.copytree(ROOT / "templates", release / "templates")
    for name in ("SKILL.md", "ARCHITECT.md"):
        (release / name).write_text("---\nname: x\ndescription: y\n---\nbody\n")
    env = env_with(
        PATH=f"{stub_bin}{os.pathsep}{os.environ['PATH']}",
        STUB_HOME=str(stub_home),
        PLAN_BUILD_RELEASE=str(release),
        HOME=str(tmp),
    )
    return repo, env


def main() -> None:
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp_name, MemoryServer() as server:
        tmp = Path(tmp_name)
        server.state.delay = DELAY
        repo, env = setup(tmp)
        env["AGENTMEMORY_URL"] = server.url
        startup = median_ms([py, "-m", "plan_build", "--version"], RUNS, env=env)
        slowest_probe = median_ms(
            [str(tmp / "bin" / "claude"), "plugin", "list", "--json"], RUNS, env=env
        )
        totals, sequential = [], []
        for _ in range(RUNS):
            started = time.perf_counter()
            out = subprocess.run(
                [py, "-m", "plan_build", "preflight", "--json"],
                cwd=repo,
                env=env,
                capture_output=True,
                text=True,
                check=False,
            )
            totals.append((time.perf_counter() - started) * 1000)
            report = json.loads(out.stdout)
            # the two Claude plugin rows come from one `claude plugin list` call: count it once
            probe_times = {
                ("claude.plugin" if c["id"].startswith("claude.plugin") else c["id"]): c["seconds"]
                for c in report["checks"]
            }
            sequential.append(sum(probe_times.values()) * 1000)
        total = statistics.median(totals)
        seq = statistics.median(sequential)
        budget = 1.5 * (slowest_probe + startup)
        print(f"preflight with every probe delayed {DELAY * 1000:.0f} ms, median of {RUNS} runs")
        print(f"  plan-build startup (--version)            {startup:7.1f} ms")
        print(f"  slowest single probe (claude plugin list) {slowest_probe:7.1f} ms")
        print(f"  whole preflight, concurrent (measured)    {total:7.1f} ms")
        print(f"  same probes one after another (sum)       {seq:7.1f} ms")
        print(
            f"  target 1.5 x (slowest probe + startup)    {budget:7.1f} ms  "
            f"({'within' if total <= budget else 'OVER'})"
        )
        print(f"  report ok={report['ok']} (checks: {len(report['checks'])})")


if __name__ == "__main__":
    main()
