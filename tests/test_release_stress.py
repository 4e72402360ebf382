"""Concurrency and crash safety (bounded to seconds; figures in docs/release.md).

- 8 processes × 100 switches of `current` with 4 readers that bind once and verify the manifest
  of what they bound: no missing, partial or mixed read.
- Concurrent full activations with readers: the same.
- SIGKILL at every named step and at ≥20 random moments of an activation: `current` is always
  a complete, valid release, and the next activation succeeds and cleans up.
"""

from __future__ import annotations

import io
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from plan_build.core.ui import Console
from plan_build.release import actions, fetch
from plan_build.release.store import Store
from plan_build.release.validate import validate
from tests.support.releases import ROOT, check_bound, fake_bundle, resolve_current

WORKER = [sys.executable, "-m", "tests.support.release_worker"]
ACTIVATION_STEPS = [
    "locked",
    "reaped",
    "copy",
    "staged",
    "validated",
    "sealed",
    "renamed",
    "linked",
    "switched",
    "logged",
]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "root"


@pytest.fixture
def store(root: Path) -> Store:
    return Store(root, Console(stream=io.StringIO()))


def spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*WORKER, *args], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def bundles(tmp: Path, *markers: str) -> list[Path]:
    paths = []
    for marker in markers:
        fake_bundle(tmp / f"bundle-{marker}", marker)
        paths.append(tmp / f"bundle-{marker}")
    return paths


def assert_current_is_complete(root: Path, store: Store) -> str:
    bound = resolve_current(root)
    assert bound is not None, "current is missing"
    assert check_bound(bound) == "ok"
    store.verify(bound.name)
    return bound.name


def run_readers(root: Path, stop: Path, writers: list[subprocess.Popen[str]]) -> dict[str, int]:
    readers = [spawn("read", str(root), str(stop)) for _ in range(4)]
    for writer in writers:
        _, err = writer.communicate(timeout=120)
        assert writer.returncode == 0, err
    stop.touch()
    totals = {"checks": 0, "missing": 0, "partial": 0, "mixed": 0}
    for reader in readers:
        out, err = reader.communicate(timeout=60)
        assert reader.returncode == 0, err
        for key, value in json.loads(out).items():
            totals[key] += value
    return totals


def test_eight_writers_switching_800_times_never_show_readers_a_broken_release(
    tmp_path: Path, root: Path, store: Store
) -> None:
    ids = [
        actions.activate(store, fetch.Source("dir", str(p), path=p), None).id
        for p in bundles(tmp_path, "A", "B", "C")
    ]
    stop = tmp_path / "stop"
    started = time.monotonic()
    writers = [spawn("switch", str(root), "100", *ids) for _ in range(8)]
    totals = run_readers(root, stop, writers)
    elapsed = time.monotonic() - started
    assert totals["checks"] > 0
    assert (totals["missing"], totals["partial"], totals["mixed"]) == (0, 0, 0), totals
    switches = (root / "activations.log").read_text().count('"source": "stress"')
    assert switches == 800
    assert_current_is_complete(root, store)
    print(f"\n800 switches with 4 readers in {elapsed:.1f}s: {totals}")


def test_concurrent_full_activations_never_mix_generations(
    tmp_path: Path, root: Path, store: Store
) -> None:
    a, b = bundles(tmp_path, "A", "B")
    actions.activate(store, fetch.Source("dir", str(a), path=a), None)
    stop = tmp_path / "stop"

    def activator(sources: list[Path]) -> subprocess.Popen[str]:
        script = (
            "import sys\n"
            "from pathlib import Path\n"
            "from plan_build.release import actions, fetch\n"
            "from plan_build.release.store import Store\n"
            "store = Store(Path(sys.argv[1]))\n"
            "for s in sys.argv[2:]:\n"
            "    actions.activate(store, fetch.Source('dir', s, path=Path(s)), None)\n"
        )
        return subprocess.Popen(
            [sys.executable, "-c", script, str(root), *map(str, sources)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    writers = [activator([b, a, b] if n % 2 else [a, b, a]) for n in range(4)]
    totals = run_readers(root, stop, writers)
    assert totals["checks"] > 0
    assert (totals["missing"], totals["partial"], totals["mixed"]) == (0, 0, 0), totals
    assert_current_is_complete(root, store)
    leftovers = [p.name for p in (root / "releases").iterdir() if p.name.startswith(".")]
    assert leftovers == []


def _activation(root: Path, source: Path, delay: float | None) -> tuple[bool, float]:
    """Run an activation and SIGKILL it `delay` seconds after it starts activating.

    Returns whether the kill landed (the process had not finished) and the seconds it ran.
    """
    child = spawn("activate", str(root), str(source))
    assert child.stdout is not None
    assert child.stdout.readline() == "go\n"
    started = time.monotonic()
    if delay is not None:
        time.sleep(delay)
        child.send_signal(signal.SIGKILL)
    child.communicate(timeout=60)
    ran = time.monotonic() - started
    assert child.returncode in (-signal.SIGKILL, 0)
    return child.returncode == -signal.SIGKILL, ran


@pytest.mark.parametrize("step", ACTIVATION_STEPS)
def test_sigkill_at_each_step_leaves_a_complete_release_active(
    step: str, tmp_path: Path, root: Path, store: Store
) -> None:
    a, b = bundles(tmp_path, "A", "B")
    old = actions.activate(store, fetch.Source("dir", str(a), path=a), None).id
    child = spawn("activate", str(root), str(b), step)
    child.communicate(timeout=60)
    assert child.returncode == -signal.SIGKILL
    now = assert_current_is_complete(root, store)
    assert (
        now == old
        if ACTIVATION_STEPS.index(step) < ACTIVATION_STEPS.index("switched")
        else (now != old)
    )
    # The next activation succeeds and removes whatever the killed one left.
    result = actions.activate(store, fetch.Source("dir", str(a), path=a), None)
    assert result.id == old
    assert [p.name for p in (root / "releases").iterdir() if p.name.startswith(".")] == []
    assert list(root.glob(".current.*")) == []


def test_sigkill_at_random_moments_never_breaks_current(
    tmp_path: Path, root: Path, store: Store
) -> None:
    sources = bundles(tmp_path, "A", "B")
    actions.activate(store, fetch.Source("dir", str(sources[0]), path=sources[0]), None)
    # How long one activation takes here, to spread the kills over it.
    _, span = _activation(root, sources[1], None)
    rng = random.Random(20261130)  # noqa: S311 - reproducible kill moments, not secrets
    seen, kills, attempts = set(), 0, 0
    while kills < 24 and attempts < 60:
        landed, _ = _activation(root, sources[attempts % 2], rng.uniform(0, span))
        attempts += 1
        kills += landed
        seen.add(assert_current_is_complete(root, store))
    assert kills >= 20
    validate(resolve_current(root), where="current")  # type: ignore[arg-type]
    final = actions.activate(store, fetch.Source("dir", str(sources[0]), path=sources[0]), None)
    assert assert_current_is_complete(root, store) == final.id
    assert [p.name for p in (root / "releases").iterdir() if p.name.startswith(".")] == []
    print(f"\n{kills} kills in {attempts} random moments of a {span * 1000:.0f} ms activation")
    assert len(seen) == 2  # kills landed both before and after the switch


@pytest.mark.parametrize("step", ["locked", "trashed"])
def test_sigkill_during_gc_keeps_current_and_the_next_run_cleans_up(
    step: str, tmp_path: Path, root: Path, store: Store
) -> None:
    for path in bundles(tmp_path, "A", "B", "C"):
        actions.activate(store, fetch.Source("dir", str(path), path=path), None)
    child = spawn("gc", str(root), "0", step)
    child.communicate(timeout=60)
    assert child.returncode == -signal.SIGKILL
    assert_current_is_complete(root, store)
    actions.gc(store, keep=0)
    names = sorted(p.name for p in (root / "releases").iterdir())
    assert names == [assert_current_is_complete(root, store)]
    assert os.path.exists(root / "current")
