"""A plan for wave tests: independent tasks with their own scopes, and a stub Codex per task."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from tests.support.dispatching import events
from tests.support.gitcmd import git
from tests.support.stubs import Stubs

HEAD = "# Tasks\n\nProse before the tasks stays.\n\n"


def task(
    tid: str,
    scope: str,
    verify: str,
    *,
    status: str = "Pending",
    deps: str = "none",
    marker: str | None = None,
) -> str:
    return f"""## {tid}: Work on {scope}

Status: {status}
Dependencies: {deps}

### Objective
Change {scope}.

### Scope
- `{scope}`

### Context
None.

### Prompt
Edit {scope} ({marker or tid.lower()}).

### Acceptance criteria
- it is edited

### Tests
None.

### Verification
```sh
{verify}
```

### CodeRabbit
Not reviewed yet.

### Evidence
None yet.

"""


def make_wave_plan(repo: Path, tasks: list[str], files: dict[str, str] | None = None) -> Path:
    """TASKS.md with these tasks plus a Complete TASK-001; committed with `files`."""
    done = task("TASK-001", "src/base.py", "true", status="Complete")
    (repo / "TASKS.md").write_text(HEAD + done + "".join(tasks) + "## Notes\n\nAfter.\n")
    (repo / ".agentmemory-project").write_text("github.com/ana/shop\n")
    (repo / "src").mkdir(exist_ok=True)
    for name, text in {
        "src/base.py": "base\n",
        "src/a.py": "a1\na2\na3\na4\na5\na6\n",
        "src/b.py": "b1\n",
        "src/c.py": "c1\n",
        "src/d.py": "d1\n",
        **(files or {}),
    }.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "plan")
    return repo / "TASKS.md"


def codex_for(stubs: Stubs, marker: str, files: dict[str, str], **extra: Any) -> None:
    """The stub Codex run whose prompt names `marker` writes `files` (in its cwd)."""
    stubs.rule(
        "codex",
        {
            "match": ["exec"],
            "contains": f"({marker})",
            "write": files,
            "stdout": events(f"Done {marker}."),
            "write_flag": {"-o": f"Done {marker}."},
            **extra,
        },
    )


def worktree_list(repo: Path) -> list[str]:
    out = subprocess.run(
        ["git", "worktree", "list", "--porcelain"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [ln.split(" ", 1)[1] for ln in out.splitlines() if ln.startswith("worktree ")]


def wave_dirs(repo: Path) -> list[Path]:
    base = repo / ".git" / "plan-build" / "worktrees"
    # (a task's own Codex folder, `.TASK-ID.codex`, lies beside its worktree)
    return (
        sorted(p for p in base.glob("*/*") if not p.name.startswith(".")) if base.exists() else []
    )
