"""What the sandbox and plan-build's hooks cost each Bash call of the real claude (issue 35
item 7), beside plain claude: the scripted model (tests/contract/fakeapis.py) asks for N
`true` commands, and the time from one tool_use answer to the request carrying its
tool_result is one call as Claude runs it.

    figure                                        reference
    one Bash call, Claude with the sandbox only   one Bash call, plain claude (no settings)
    one Bash call, plan-build's whole layer       one Bash call, plain claude
      (sandbox, deny rules, the Bash gate and the checkpoint hook)

Every run uses bypass mode (no questions), the same machine and the same loopback model;
configurations alternate round by round so load slows them alike. Nothing is asserted. It
needs what the contract suite needs (the pinned claude in its cache, tmux, bubblewrap, socat).
Run: python bench/bench_claude_calls.py [--calls 8] [--rounds 2]
"""

from __future__ import annotations

import json
import os
import statistics
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
CALLS = int(os.environ.get("BENCH_CALLS", "8"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "2"))


def _gaps(api: Any) -> list[float]:
    """Seconds from the model's answer asking for call k to the request holding its result."""
    main = [
        r
        for r in api.requests
        if r.method == "POST"
        and r.path.startswith("/v1/messages")
        and not r.path.startswith("/v1/messages/count_tokens")
        and isinstance(r.body, dict)
        and "Bash" in [t.get("name") for t in r.body.get("tools") or []]
    ]
    at: dict[int, float] = {}
    for r in main:
        at.setdefault(len(api._results(r.body)), r.at)
    return [at[k + 1] - at[k] for k in range(CALLS) if k in at and k + 1 in at]


@pytest.mark.contract
@pytest.mark.timeout(1800)
def test_bench_claude_calls(lab: Any) -> None:
    from tests.contract.test_claude_layer_contract import env_for
    from tests.contract.test_launch_contract import EXIT
    from tests.contract.test_sandbox_contract import sandbox_only, wait_for_all

    from plan_build.core import gitrepo
    from plan_build.startup import claudelayer

    tmux, repo, agents, api, tmp = lab.tmux, lab.ready, lab.agents, lab.api, lab.tmp
    env = env_for(agents, repo, api)
    env[claudelayer.HOOK_ENV] = claudelayer.hook_program()
    policy = claudelayer.policy_for(gitrepo.discover(repo), {"HOME": env["HOME"]})
    layer = tmp / "layer.json"
    layer.write_text(json.dumps(claudelayer.settings("plan", policy=policy)))
    configs = {
        "plain claude": [],
        "sandbox only": ["--settings", str(sandbox_only(repo, tmp))],
        "plan-build's layer": ["--settings", str(layer)],
    }
    gaps: dict[str, list[float]] = {name: [] for name in configs}
    for _ in range(ROUNDS):
        for name, flags in configs.items():
            api.recorder.requests.clear()
            api.commands = [f"true {k}" for k in range(CALLS)]  # distinct: results are keyed
            argv = ["claude", *flags, "--dangerously-skip-permissions", "--", "go"]
            print(f"  running {name} ...", flush=True)
            tmux.start(argv, cwd=repo, env=env)
            wait_for_all(tmux, api)
            tmux.wait_text("SCRIPTED-REPLY: done", 60)
            tmux.command("/exit", EXIT)
            tmux.close()
            gaps[name] += _gaps(api)
    plain = statistics.median(gaps["plain claude"])
    print(f"\none Bash call (`true`), medians of {CALLS} calls x {ROUNDS} rounds:")
    for name, values in gaps.items():
        median = statistics.median(values)
        print(
            f"  {name:<20} {median * 1000:7.1f} ms   "
            f"{(median - plain) * 1000:+7.1f} ms, {median / plain:4.2f}x plain claude"
        )


def main() -> int:
    sys.path.insert(0, str(ROOT))
    args = sys.argv[1:]
    for flag, var in (("--calls", "BENCH_CALLS"), ("--rounds", "BENCH_ROUNDS")):
        if flag in args:
            os.environ[var] = args[args.index(flag) + 1]
    base = Path.home() / ".cache" / "plan-build-contract" / "bench-basetemp"
    return pytest.main(
        [
            __file__,
            "-m",
            "contract",
            "-p",
            "tests.conftest",
            "-p",
            "tests.contract.conftest",
            "-p",
            "no:randomly",
            "-n",
            "0",
            "-q",
            "-s",
            f"--basetemp={base}",
            f"--rootdir={ROOT}",
        ]
    )


if __name__ == "__main__":
    raise SystemExit(main())
