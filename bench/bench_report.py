"""The report of a large session: 1,000 findings over 10 review rounds and 50 dispatched
tasks (two attempts each), rendered as HTML with its redaction pass.

References (issue 23): it renders in under 1 s and gives under 3 MB of HTML. Each figure is
printed beside its reference as a ratio, measured in this run (median of the rounds); the
Markdown is timed beside it for comparison.

Run: python bench/bench_report.py [rounds]
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support import stories  # noqa: E402

from plan_build.views import report as view  # noqa: E402

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 5
LIMIT_S, LIMIT_MB = 1.0, 3.0
HOME = str(Path.home())


def verdict(value: float, limit: float) -> str:
    return "within" if value <= limit else "OVER"


def main() -> None:
    story = stories.story(rounds=10, findings_per_round=100, tasks=50, diff_lines=20_000)
    findings = sum(len(r.findings) for r in story.rounds)
    templates = ROOT / "templates"
    env = {"BENCH_API_TOKEN": "bench-secret-value-0001"}
    paths = [(HOME, "~")]
    view.render(view.redacted(story, env, paths), "html", templates)  # warm: detect-secrets, jinja
    times: dict[str, list[float]] = {"html": [], "md": []}
    size = {"html": 0, "md": 0}
    for _ in range(ROUNDS):
        for fmt in ("html", "md"):
            t0 = time.perf_counter()
            text = view.render(view.redacted(story, env, paths), fmt, templates)
            times[fmt].append(time.perf_counter() - t0)
            size[fmt] = len(text.encode("utf-8"))
    print(
        f"session: {findings} findings over {len(story.rounds)} rounds, {len(story.tasks)} tasks, "
        f"{len(story.events)} events; median of {ROUNDS} rounds"
    )
    html_s = statistics.median(times["html"])
    html_mb = size["html"] / 1e6
    print(
        f"html render (redaction included): {html_s:.3f} s vs {LIMIT_S:.1f} s "
        f"= {html_s / LIMIT_S:.2f}x ({verdict(html_s, LIMIT_S)})"
    )
    print(
        f"html size: {html_mb:.2f} MB vs {LIMIT_MB:.1f} MB "
        f"= {html_mb / LIMIT_MB:.2f}x ({verdict(html_mb, LIMIT_MB)})"
    )
    md_s = statistics.median(times["md"])
    print(f"md render: {md_s:.3f} s, {size['md'] / 1e6:.2f} MB (no reference; for comparison)")


if __name__ == "__main__":
    main()
