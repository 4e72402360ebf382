"""Hand-built session stories for the report's goldens, browser test and benchmark: every
kind of event, a planted hostile finding, and a scalable size."""

from __future__ import annotations

import dataclasses

from plan_build.core import codexusage
from plan_build.views import story as st

# token use as Codex reports it (cached input is part of input, reasoning part of output)
IMPLEMENT = codexusage.Usage(
    input=1200, cached_input=200, cache_write_input=0, output=340, reasoning_output=40
)
REVIEW = codexusage.Usage(
    input=5000, cached_input=0, cache_write_input=0, output=900, reasoning_output=120
)
SCRIPT_FINDING = "<script>document.title='pwned'</script> runs in the page"
IMG_FINDING = "<img src=x onerror=alert(1)> in the summary"


def _at(minute: int, second: int = 0) -> str:
    hour, minute = 10 + minute // 60, minute % 60
    return f"2026-12-03T{hour:02d}:{minute:02d}:{second:02d}Z"


def story(
    *,
    rounds: int = 2,
    findings_per_round: int = 2,
    tasks: int = 1,
    committed: bool = True,
    diff_lines: int = 6,
) -> st.Story:
    events = [st.Event("baseline", "baseline", _at(0))]
    round_rows = []
    minute = 1
    for n in range(1, rounds + 1):
        phase = "plan" if n == 1 else "implement"
        found = []
        for i in range(findings_per_round):
            sev = ("HIGH", "MEDIUM", "LOW", "CRITICAL")[i % 4]
            text = (
                SCRIPT_FINDING
                if (n, i) == (1, 0)
                else IMG_FINDING
                if (n, i) == (1, 1)
                else f"src/app/module{i}.py:{10 + i} the handler ignores an error"
            )
            decision = ("FIX", "REJECT", None)[i % 3]
            found.append(
                st.FindingRow(
                    f"{sev}-{i + 1}",
                    sev,
                    "codex" if i % 2 == 0 else "coderabbit",
                    f"src/app/module{i}.py:{10 + i}" if (n, i) not in ((1, 0), (1, 1)) else None,
                    text,
                    decision,
                    "checked upstream" if decision == "REJECT" else None,
                    {"FIX": "FIX", "REJECT": "NO-CHANGE", None: "OPEN"}[decision],
                )
            )
        reviewers = (
            st.ReviewerRow(
                "codex", "findings" if found else "clean", 42.0, None, codexusage.summed([REVIEW])
            ),
            st.ReviewerRow("coderabbit", "skipped", None, "coderabbit is not installed"),
        )
        round_rows.append(
            st.RoundStory(
                "wf-1",
                phase,
                n,
                _at(minute),
                _at(minute + 1),
                reviewers,
                tuple(found),
                _at(minute + 3),
            )
        )
        events.append(st.Event("review", f"{phase} r{n}: codex, coderabbit", _at(minute), 60.0))
        events.append(st.Event("decisions", f"{phase} r{n}: {len(found)} decided", _at(minute + 2)))
        minute += 4
    task_rows = []
    for t in range(1, tasks + 1):
        attempts = []
        for a in (1, 2):
            attempts.append(
                st.AttemptStory(
                    a,
                    "implement" if a == 1 else "correct",
                    _at(minute, a * 10),
                    30.0,
                    "verified" if a == 2 else "checks_failed",
                    3,
                    0,
                    (st.CheckRow("pytest", a == 2, 0 if a == 2 else 1, 2.5),),
                    IMPLEMENT if a == 1 else codexusage.UNKNOWN,
                )
            )
            kind = "dispatch" if a == 1 else "correction"
            events.append(st.Event(kind, f"T{t} attempt {a}", _at(minute, a * 10), 30.0))
        task_rows.append(
            st.TaskStory(
                f"T{t}",
                f"Task number {t}",
                ("src/app/",),
                f"20261203T10{t:02d}00Z-ab{t:02d}",
                "Review",
                "verified",
                tuple(attempts),
                "<!-- plan-build:dispatch -->\nchanged: src/app/module.py (in scope)",
            )
        )
        minute += 1
    verify = st.VerifyStory(
        _at(minute),
        True,
        False,
        (
            st.VerifyCheck(
                "command.test", "pass", "pytest -q (3.2s)", 3.2, "....\n12 passed in 3.1s"
            ),
            st.VerifyCheck("secrets", "pass", "no secret in the change", 0.4),
        ),
    )
    events.append(st.Event("verify", "verify: passed", _at(minute), 3.6))
    if committed:
        events.append(st.Event("commit", "commit 0123456789ab", _at(minute + 1)))
    diff = "diff --git a/src/app/module.py b/src/app/module.py\n" + "".join(
        f"+line {i}\n" for i in range(diff_lines)
    )
    return st.Story(
        header=st.Header(
            "20261203-100000-abc123",
            "architect",
            _at(0),
            "main",
            "fedcba9876543210fedcba9876543210fedcba98",
            "0123456789abcdef0123456789abcdef01234567" if committed else None,
            _at(minute + 1) if committed else None,
            "degraded",
            "memory.server: no AgentMemory server answers",
            "demo-project",
        ),
        outcome="committed as 0123456789ab" if committed else "missing: verify has not run",
        files=(
            st.FileRow("src/app/module.py", "M", diff_lines, 0),
            st.FileRow("assets/logo.png", "A", None, None),
        ),
        diff=diff,
        rounds=tuple(round_rows),
        tasks=tuple(task_rows),
        verify=verify,
        tokens={
            "correct": codexusage.summed([codexusage.UNKNOWN] * tasks),
            "implement": codexusage.summed([IMPLEMENT] * tasks),
            "reviewer (review rounds)": codexusage.summed([REVIEW] * len(round_rows)),
        },
        recipes=("sha256:0f1e2d3c4b5a69788796a5b4c3d2e1f0",),
        events=tuple(sorted(events, key=lambda e: e.at)),
    )


def big_change(count: int, *, long_name: bool = False) -> st.Story:
    """The story of a change of `count` files (a 255-byte file name first when `long_name`)."""
    files = [
        st.FileRow(f"src/pkg{i // 100:03d}/file{i:05d}.py", "M", i % 7, i % 3) for i in range(count)
    ]
    base = story()
    rounds = base.rounds
    if long_name and files:
        long = "src/" + "n" * 252 + ".py"  # 255 bytes: a name's limit
        files[0] = st.FileRow(long, "A", 1, 0)
        first = rounds[0]  # and a finding that points into it
        where = dataclasses.replace(first.findings[0], location=f"{long}:12")
        rounds = (dataclasses.replace(first, findings=(where, *first.findings[1:])), *rounds[1:])
    return st.Story(**{**base.__dict__, "files": tuple(files), "rounds": rounds})
