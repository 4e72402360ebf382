"""Shared scenario pieces for the dispatch tests: a task plan, Codex event streams, a verifier."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.support import stubtool
from tests.support.gitcmd import git
from tests.support.stubs import Stubs

THREAD = "01a22a0c-1f0b-7461-8cfe-43e314f760ae"

PLAN = """\
# Tasks for the shop

Prose the architect wrote. plan-build must keep it byte for byte.

## TASK-001: Add the audit log model

- **Status:** Complete
- **Dependencies:** none
- Owner: ana

### Objective
Store audit entries.

### Scope
- `src/audit.py`

### Context
The shop has no audit log yet.

### Prompt
Create the audit log model.

### Acceptance criteria
- entries are stored

### Tests
Unit tests for storing entries.

### Verification
```sh
grep -q audit src/audit.py
```

### CodeRabbit
Clean (round 1).

### Evidence
Reviewed by ana.

## TASK-002: Paginate the audit log

Status: Pending
Dependencies: TASK-001

### Objective
Show audit entries 50 at a time.

### Scope
- `src/app.py`
- `tests/**` (new tests go here)

### Context
See SPEC.md, section "Audit log".

### Prompt
````markdown
Add pagination to the audit log view in src/app.py.
## Steps
1. Add a page parameter.
````

### Acceptance criteria
- page 2 shows entries 51-100

### Tests
A unit test for page boundaries.

### Verification
```sh
{verify}
```

### CodeRabbit
Not reviewed yet.

### Evidence
None yet.

## TASK-003: Export the audit log

Status: Pending
Dependencies: TASK-002

### Objective
CSV export.

### Scope
- src/export.py

### Prompt
Write the export.

### Acceptance criteria
- a CSV file

### Tests
One test.

### Verification
```sh
grep -q csv src/export.py
```

## Notes

Anything after the tasks stays too.
"""

VERIFY_SCRIPT = """\
import json, os, sys
from pathlib import Path
home = Path(os.environ["STUB_HOME"])
with (home / "calls.jsonl").open("a") as fh:
    fh.write(json.dumps({"tool": "verify", "argv": sys.argv[1:], "cwd": os.getcwd(),
                         "env": {}, "pid": os.getpid(), "stdin_tty": None}) + "\\n")
text = Path("src/app.py").read_text() if Path("src/app.py").exists() else ""
if "fixed" in text:
    print("3 passed")
    sys.exit(0)
print("FAILED tests/test_page.py::test_page_two - assert 0 == 51")
print("1 failed", file=sys.stderr)
sys.exit(1)
"""


def make_plan(repo: Path, verify: str | None = None, text: str | None = None) -> Path:
    """A repository with TASKS.md, SPEC.md, an identity and a verifier script (committed)."""
    checker = repo.parent / "verify_page.py"
    checker.write_text(VERIFY_SCRIPT)
    command = verify if verify is not None else f"{sys.executable} {checker}"
    (repo / "TASKS.md").write_text(text if text is not None else PLAN.replace("{verify}", command))
    (repo / "SPEC.md").write_text("# Spec\n\n## Audit log\nPaginate.\n")
    (repo / ".agentmemory-project").write_text("github.com/ana/shop\n")
    (repo / "src").mkdir(exist_ok=True)
    (repo / "src" / "app.py").write_text("def view():\n    return []\n")
    (repo / "src" / "audit.py").write_text("# audit\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "plan")
    return repo / "TASKS.md"


# The records an architect session keeps (the architect skill's list), each a stub.
RECORDS = (
    "ADR.md",
    "CHANGELOG.md",
    "docs/USER_MANUAL.md",
    "docs/RUNBOOK.md",
    "docs/API.md",
    "docs/DEPLOYMENT.md",
    "docs/SECURITY.md",
    "docs/HANDOVER.md",
)


def commit_records(repo: Path) -> None:
    """Commit a stub of every architect record, so the records check passes."""
    for doc in RECORDS:
        (repo / doc).parent.mkdir(parents=True, exist_ok=True)
        (repo / doc).write_text(f"# {Path(doc).stem}\n\nNot Applicable: a test shop.\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the architect's records")


def events(
    message: str = "Added pagination.", *, usage: bool = True, failed: str | None = None
) -> str:
    rows: list[dict[str, Any]] = [
        {"type": "thread.started", "thread_id": THREAD},
        {"type": "turn.started"},
    ]
    if failed:  # the real CLI's retries, then the error and turn.failed
        return stubtool.codex_exec_failed_events(failed, thread_id=THREAD)
    else:
        rows.append(
            {
                "type": "item.completed",
                "item": {"id": "item_1", "type": "agent_message", "text": message},
            }
        )
        done: dict[str, Any] = {"type": "turn.completed"}
        if usage:
            done["usage"] = {
                "input_tokens": 1200,
                "cached_input_tokens": 200,
                "cache_write_input_tokens": 0,
                "output_tokens": 300,
                "reasoning_output_tokens": 40,
            }
        rows.append(done)
    return "".join(json.dumps(r) + "\n" for r in rows)


def codex_edits(
    stubs: Stubs,
    files: dict[str, str],
    *,
    message: str = "Added pagination.",
    times: int | None = None,
    exit: int = 0,
    usage: bool = True,
    **extra: Any,
) -> None:
    """Codex `exec` changes these files (relative to the repo) and reports success."""
    rule: dict[str, Any] = {
        "match": ["exec"],
        "write": files,
        "stdout": events(message, usage=usage),
        "write_flag": {"-o": message},
        "exit": exit,
        **extra,
    }
    if times is not None:
        rule["times"] = times
    stubs.rule("codex", rule)


def sequence(stubs: Stubs) -> list[str]:
    """The order of Codex runs and verifier runs, e.g. ["codex", "verify", "codex", "verify"]."""
    return [c["tool"] for c in stubs.calls() if c["tool"] == "verify" or c["argv"][:1] == ["exec"]]


def codex_runs(stubs: Stubs) -> list[dict[str, Any]]:
    return [c for c in stubs.calls("codex") if c["argv"][:1] == ["exec"]]


def status_of(tasks_md: Path, task_id: str) -> str | None:
    from plan_build.dispatch import taskfile

    task = taskfile.read(tasks_md).get(task_id)
    return task.status if task else None


def without_owned(text: str) -> str:
    """TASKS.md minus what plan-build owns (status values, its evidence blocks and the blank
    line it puts before a new block)."""
    import re

    text = re.sub(
        r"\n?<!-- plan-build:dispatch (\S+) begin -->.*?<!-- plan-build:dispatch \1 end -->\n",
        "",
        text,
        flags=re.DOTALL,
    )
    return re.sub(r"(?m)^(\s*(?:- )?(?:\*\*)?Status:(?:\*\*)?) .*$", r"\1 X", text)
