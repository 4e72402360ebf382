"""Honest dispatch telemetry: what Codex's `--json` stream reported, and the JSON-lines log.

Anything not observed is recorded as unknown (`"unknown"` for token usage, `null` for a
number), never guessed or zero-filled. Records never hold prompt text, command output,
environment values or credentials: ids, counts, exit codes, durations and outcomes only.
The log is `<git common dir>/plan-build/telemetry/dispatch.jsonl`, one JSON object a line,
appended with a single write per record.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from plan_build.core import sessionvars

SCHEMA = 1
UNKNOWN = "unknown"
USAGE_KEYS = (
    "input_tokens",
    "cached_input_tokens",
    "cache_write_input_tokens",
    "output_tokens",
    "reasoning_output_tokens",
)


@dataclass
class CodexEvents:
    """A summary of one `codex exec --json` stdout stream."""

    events: int = 0
    unparsable: int = 0
    thread_id: str | None = None
    usage: dict[str, int] | None = None
    final_message: str | None = None
    failures: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    files_reported: list[str] = field(default_factory=list)
    commands: int = 0
    turn_completed: bool = False
    sandbox_errors: list[str] = field(default_factory=list)  # commands the sandbox refused
    git_commands: list[str] = field(default_factory=list)  # git commands that change state

    @property
    def tokens(self) -> dict[str, int] | str:
        return dict(self.usage) if self.usage is not None else UNKNOWN


# A command Codex could not run because its sandbox failed to start. Linux (bubblewrap and
# landlock): e.g. "bwrap: Creating new namespace failed: ... (ENOSPC)". macOS (Seatbelt, which
# Codex runs as /usr/bin/sandbox-exec, codex-rs/core/README.md): sandbox-exec itself prints only
# when it cannot apply the profile or start the command, then exits 71, e.g.
# "sandbox-exec: sandbox_apply: Operation not permitted" (already inside a sandbox: Seatbelt does
# not nest; github.com/openai/codex/issues/45657 and /26262) and "sandbox-exec: execvp() of
# '...' failed: Operation not permitted" (github.com/openai/codex/issues/38286). A command the
# profile merely denies ("/bin/ps: Operation not permitted") ran, so it is not matched.
SANDBOX_ERROR = re.compile(
    r"(?im)^\s*(bwrap: .*|.*codex-linux-sandbox.*|.*landlock.*(?:fail|error|not supported).*"
    r"|(?:\S*/)?sandbox-exec: .*)$"
)
# git commands that change the repository's state, which the prompt forbids
GIT_CHANGE = re.compile(r"\bgit\s+(?:-\S+\s+)*(add|commit|push|reset|restore|checkout|stash|rm)\b")


def parse_events(stdout: str) -> CodexEvents:
    """Read Codex's JSONL event stream; lines that are not JSON objects are only counted."""
    out = CodexEvents()
    for raw in stdout.splitlines():
        if not raw.strip():
            continue
        try:
            event = json.loads(raw)
        except (ValueError, RecursionError):
            event = None
        if not isinstance(event, dict):
            out.unparsable += 1
            continue
        out.events += 1
        _event(out, event)
    return out


def _event(out: CodexEvents, event: dict[str, Any]) -> None:
    kind = event.get("type")
    if kind == "thread.started" and isinstance(event.get("thread_id"), str):
        out.thread_id = event["thread_id"]
    elif kind == "turn.completed":
        out.turn_completed = True
        _usage(out, event.get("usage"))
    elif kind == "turn.failed":
        err = event.get("error")
        msg = err.get("message") if isinstance(err, dict) else None
        out.failures.append(str(msg or "turn failed"))
    elif kind == "error":
        out.errors.append(str(event.get("message") or "error"))
    elif kind == "item.completed" and isinstance(event.get("item"), dict):
        _item(out, event["item"])


def _usage(out: CodexEvents, usage: Any) -> None:
    if not isinstance(usage, dict):
        return
    known = {k: v for k, v in usage.items() if isinstance(v, int) and not isinstance(v, bool)}
    if not known:
        return
    total = out.usage or {}
    for k, v in known.items():
        total[k] = total.get(k, 0) + v
    out.usage = total


def _item(out: CodexEvents, item: dict[str, Any]) -> None:
    itype = item.get("type")
    if itype == "agent_message" and isinstance(item.get("text"), str):
        out.final_message = item["text"]
    elif itype == "file_change" and isinstance(item.get("changes"), list):
        out.files_reported.extend(
            c["path"]
            for c in item["changes"]
            if isinstance(c, dict) and isinstance(c.get("path"), str)
        )
    elif itype == "command_execution":
        out.commands += 1
        command = str(item.get("command") or "")
        output = str(item.get("aggregated_output") or "")
        failed = item.get("status") == "failed" or item.get("exit_code") not in (0, None)
        if failed and (m := SANDBOX_ERROR.search(output)):
            out.sandbox_errors.append(m.group(0).strip()[:300])
        if GIT_CHANGE.search(command):
            state = "failed" if failed else "ran"
            out.git_commands.append(f"{command.strip()[:200]} ({state})")
    elif itype == "error" and isinstance(item.get("message"), str):
        out.errors.append(item["message"])


def session_of(env: Mapping[str, str]) -> str | None:
    """The session a dispatch runs in, as PLAN_BUILD_SESSION (set in the session's Claude)
    names it; None outside a session, or when the value is not a session id. The report
    gives a session the dispatches tagged with its id, and untagged ones only by time. The
    grammar is the baseline's (`sessionvars`): an id a baseline refuses is never a tag."""
    return sessionvars.session_of(env)


def log_path(state_dir: Path) -> Path:
    return state_dir / "telemetry" / "dispatch.jsonl"


def append(state_dir: Path, record: Mapping[str, Any]) -> None:
    """Append one record (a single write on an O_APPEND descriptor)."""
    path = log_path(state_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    line = (json.dumps({"schema": SCHEMA, **record}, sort_keys=True) + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def read(state_dir: Path) -> tuple[list[dict[str, Any]], int]:
    """All readable records and the number of lines that could not be read."""
    path = log_path(state_dir)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return [], 0
    records: list[dict[str, Any]] = []
    bad = 0
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError):
            bad += 1
            continue
        if isinstance(rec, dict):
            records.append(rec)
        else:
            bad += 1
    return records, bad


def sum_tokens(values: Iterable[Any]) -> dict[str, int] | str:
    """Summed usage, or "unknown" as soon as one value is unknown (no partial sums)."""
    total: dict[str, int] = {}
    for value in values:
        if not isinstance(value, dict):
            return UNKNOWN
        for k, v in value.items():
            if isinstance(v, int) and not isinstance(v, bool):
                total[k] = total.get(k, 0) + v
    return total


def stats(state_dir: Path) -> dict[str, Any]:
    """Attempts, first-attempt success and exhausted caps over the whole log."""
    records, bad = read(state_dir)
    dispatches = [r for r in records if r.get("kind") == "dispatch"]
    attempts = [r for r in records if r.get("kind") == "attempt"]
    finished = [d for d in dispatches if d.get("outcome") in ("Review", "Blocked")]
    first_ok = [d for d in finished if d.get("outcome") == "Review" and d.get("attempts") == 1]
    outcomes: dict[str, int] = {}
    reasons: dict[str, int] = {}
    for d in dispatches:
        outcomes[str(d.get("outcome"))] = outcomes.get(str(d.get("outcome")), 0) + 1
        reasons[str(d.get("reason"))] = reasons.get(str(d.get("reason")), 0) + 1
    roles: dict[str, dict[str, Any]] = {}
    for a in attempts:
        role = str(a.get("role"))
        row = roles.setdefault(role, {"attempts": 0, "seconds": 0.0, "verified": 0})
        row["attempts"] += 1
        secs = (a.get("codex") or {}).get("seconds")
        if isinstance(secs, int | float):
            row["seconds"] += float(secs)
        if a.get("outcome") == "verified":
            row["verified"] += 1
    for row in roles.values():
        row["mean_codex_seconds"] = round(row.pop("seconds") / row["attempts"], 3)
    tokens: dict[str, int] = {}
    known = 0
    for a in attempts:
        usage = a.get("tokens")
        if isinstance(usage, dict):
            known += 1
            for k, v in usage.items():
                if isinstance(v, int) and not isinstance(v, bool):
                    tokens[k] = tokens.get(k, 0) + v
    recipes: dict[str, dict[str, Any]] = {}
    for d in dispatches:
        rec = d.get("recipe") or {}
        fp = str(rec.get("fingerprint", UNKNOWN))
        entry = recipes.setdefault(fp, {"id": rec.get("id", UNKNOWN), "dispatches": 0})
        entry["dispatches"] += 1
    return {
        "dispatches": len(dispatches),
        "attempts": len(attempts),
        "outcomes": outcomes,
        "reasons": reasons,
        "first_attempt_success": {
            "count": len(first_ok),
            "of": len(finished),
            "rate": round(len(first_ok) / len(finished), 3) if finished else None,
        },
        "exhausted_caps": sum(1 for d in dispatches if d.get("exhausted") is True),
        "by_role": roles,
        "tokens": {
            "reported": tokens,
            "attempts_with_usage": known,
            "attempts_unknown": len(attempts) - known,
        },
        "recipes": recipes,
        "unreadable_lines": bad,
    }
