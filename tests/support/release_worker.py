"""Worker processes for the release stress and kill-injection tests.

    python -m tests.support.release_worker switch ROOT COUNT ID...   # writer: COUNT switches
    python -m tests.support.release_worker read ROOT STOPFILE         # reader: bind, verify
    python -m tests.support.release_worker activate ROOT SOURCE [KILL_AT]
    python -m tests.support.release_worker gc ROOT KEEP [KILL_AT]

`activate` prints "go" when it is about to activate, so the parent can time its SIGKILL; with
KILL_AT it kills itself at that named checkpoint instead.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

from plan_build import release
from plan_build.core.ui import Console
from plan_build.release import actions, fetch
from plan_build.release.store import Store
from tests.support.releases import check_bound, resolve_current


def switch(root: Path, count: int, ids: list[str]) -> None:
    store = Store(root, Console(stream=open(os.devnull, "w")))  # noqa: SIM115
    offset = os.getpid()
    for n in range(count):
        with store.locked():
            store.switch(ids[(n + offset) % len(ids)], action="activate", source="stress")


def read(root: Path, stop: Path) -> None:
    counts = {"checks": 0, "missing": 0, "partial": 0, "mixed": 0}
    while True:
        done = stop.exists()
        bound = resolve_current(root)  # once per "run", then only this absolute path
        if bound is None:
            counts["missing"] += 1
        else:
            verdict = check_bound(bound)
            counts["checks"] += 1
            if verdict != "ok":
                counts[verdict] += 1
        if done:
            break
    print(json.dumps(counts))


def kill_at(step_name: str | None) -> None:
    if step_name:

        def die(step: str) -> None:
            if step == step_name:
                os.kill(os.getpid(), signal.SIGKILL)

        release.checkpoint_hooks.append(die)


def gc(root: Path, keep: int, step: str | None) -> None:
    kill_at(step)
    print(json.dumps(actions.gc(Store(root, Console(stream=sys.stderr)), keep).as_json()))


def activate(root: Path, source: str, step: str | None) -> None:
    kill_at(step)
    store = Store(root, Console(stream=sys.stderr))
    src = fetch.classify(source, Path.cwd(), pinned=False)
    print("go", flush=True)
    result = actions.activate(store, src, None)
    print(json.dumps(result.as_json()), flush=True)


def main() -> None:
    mode, root = sys.argv[1], Path(sys.argv[2])
    if mode == "switch":
        switch(root, int(sys.argv[3]), sys.argv[4:])
    elif mode == "read":
        read(root, Path(sys.argv[3]))
    elif mode == "activate":
        activate(root, sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else None)
    elif mode == "gc":
        gc(root, int(sys.argv[3]), sys.argv[4] if len(sys.argv) > 4 else None)


if __name__ == "__main__":
    main()
