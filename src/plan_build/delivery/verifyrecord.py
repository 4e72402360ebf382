"""Where `verify` records what it checked, and reading that record back.

A leaf of its own so that readers (`commit`, `status`) need not load the checks themselves.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from plan_build.core import fsutil
from plan_build.core.gitrepo import Repo
from plan_build.delivery.baseline import sessions_dir

# Failing checks that `commit` lets the user accept at its approval (never an agent).
ACCEPTABLE_AT_COMMIT = frozenset({"secrets.allowlisted"})


def record_path(repo: Repo, session_id: str) -> Path:
    return sessions_dir(repo) / session_id / "verify.json"


def last_record(repo: Repo, session_id: str) -> dict[str, Any] | None:
    """The last verify record of the session; None when it was never verified."""
    path = record_path(repo, session_id)
    fix = "run plan-build verify again (it replaces the record)"
    try:
        data = fsutil.read_json(path, fix)
    except FileNotFoundError:
        return None
    if not isinstance(data, dict):
        raise fsutil.StateFileError(path, "it is not a verify record (not a JSON object)", fix)
    return data


__all__ = ["ACCEPTABLE_AT_COMMIT", "last_record", "record_path"]
