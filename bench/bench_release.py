"""Releases: switch-only activation (reference: median under 20 ms), build + stage + activate
of the real bundle (reference: under 2 s), the bundle's size, and startup through the launcher.

Run: python bench/bench_release.py [switches]
Figures only; nothing here asserts a time.
"""

from __future__ import annotations

import io
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, median_ms

from plan_build.core.ui import Console
from plan_build.release import actions, bundle, fetch
from plan_build.release.install import install
from plan_build.release.store import Store

SWITCHES = int(sys.argv[1]) if len(sys.argv) > 1 else 200
BUILDS = 3


def fake_release(path: Path, marker: str) -> Path:
    sys.path.insert(0, str(ROOT))
    from tests.support.releases import fake_bundle

    fake_bundle(path, marker)
    return path


def bench_switch(base: Path) -> tuple[float, float]:
    store = Store(base / "switch-root", Console(stream=io.StringIO()))
    ids = [
        actions.activate(store, fetch.Source("dir", m, path=p), None).id
        for m, p in (("A", fake_release(base / "A", "A")), ("B", fake_release(base / "B", "B")))
    ]
    times = []
    for n in range(SWITCHES):
        started = time.perf_counter()
        with store.locked():
            store.switch(ids[n % 2], action="activate", source="bench")
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.95) - 1]


def bench_build_and_activate(base: Path) -> tuple[float, float, float, bundle.Built]:
    totals, builds, activations = [], [], []
    built = None
    for n in range(BUILDS):
        store = Store(base / f"root-{n}", Console(stream=io.StringIO()))
        out = base / f"out-{n}"
        started = time.perf_counter()
        built = bundle.build(ROOT, out)
        middle = time.perf_counter()
        src = fetch.Source("dir", str(built.directory), path=built.directory)
        actions.activate(store, src, built.digest)
        done = time.perf_counter()
        builds.append(middle - started)
        activations.append(done - middle)
        totals.append(done - started)
    assert built is not None
    return (
        statistics.median(totals),
        statistics.median(builds),
        statistics.median(activations),
        built,
    )


def main() -> None:
    base = Path(tempfile.mkdtemp(prefix="plan-build-bench-"))
    try:
        switch_median, switch_p95 = bench_switch(base)
        total, build, activate, built = bench_build_and_activate(base)
        store = Store(base / "root-0", Console(stream=io.StringIO()))
        home = base / "home"
        install(store.root, home, home / "bin", force=False, path_env="")
        launcher = [str(home / "bin" / "plan-build"), "--version"]
        env = {k: v for k, v in os.environ.items() if k != "PLAN_BUILD_RELEASE"}
        launcher_ms = median_ms(launcher, 11, env=env)
        checkout_ms = median_ms([sys.executable, "-m", "plan_build", "--version"], 11, env=env)
    finally:
        shutil.rmtree(base, ignore_errors=True)

    print(f"releases ({SWITCHES} switches, {BUILDS} builds; figures, not timed tests)")
    print(
        f"  switch only (lock, symlink, replace, fsync, log)  median {switch_median:6.2f} ms"
        f"   p95 {switch_p95:6.2f} ms   reference < 20 ms median"
    )
    print(
        f"  build + stage + activate (real bundle)           median {total:6.2f} s"
        f"    reference < 2 s"
    )
    print(f"    of which build {build:.2f} s, stage + validate + switch {activate:.2f} s")
    print(
        f"  bundle size  {built.size / 1e6:.2f} MB ({built.files} files;"
        f" zipapp {built.pyz_size / 1e6:.2f} MB; not bundled: {', '.join(built.not_bundled)})"
    )
    print(
        f"  plan-build --version via launcher {launcher_ms:6.1f} ms"
        f"   from the checkout {checkout_ms:6.1f} ms"
    )


if __name__ == "__main__":
    main()
