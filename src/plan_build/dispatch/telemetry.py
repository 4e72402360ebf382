"""Honest dispatch telemetry: what Codex's `--json` stream reported, and the JSON-lines log.

Anything not observed is recorded as unknown (`null` for a run's `usage` or a number), never
guessed or zero-filled; token use is Codex's own `turn.completed` figures (`codexusage`,
docs/adr/0175). Records never hold prompt text, command output, environment values or
credentials: ids, counts, exit codes, durations and outcomes only.
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

from plan_build.core import codexusage, sessionvars
from plan_build.core.codexusage import Usage

SCHEMA = 1
UNKNOWN = "unknown"


@dataclass
class CodexEvents:
    """A summary of one `codex exec --json` stdout stream."""

    events: int = 0
    unparsable: int = 0
    thread_id: str | None = None
    usage: Usage = codexusage.UNKNOWN
    final_message: str | None = None
    failures: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    files_reported: list[str] = field(default_factory=list)
    commands: int = 0
    turn_completed: bool = False
    sandbox_errors: list[str] = field(default_factory=list)  # commands the sandbox refused
    git_commands: list[str] = field(default_factory=list)  # git commands that change state


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


def parse_file(path: Path) -> CodexEvents:
    """Read the JSONL event stream Codex wrote to `path`, a line at a time; lines that are
    not JSON objects (or too long to read) are only counted."""
    skipped = [0]
    out = _summary(codexusage.events(path, skipped))
    out.unparsable = skipped[0]
    return out


def parse_events(stdout: str) -> CodexEvents:
    """`parse_file` for a stream already in memory."""
    events: list[dict[str, Any]] = []
    unparsable = 0
    for raw in stdout.splitlines():
        if not raw.strip():
            continue
        try:
            event = json.loads(raw)
        except (ValueError, RecursionError):
            event = None
        if isinstance(event, dict):
            events.append(event)
        else:
            unparsable += 1
    out = _summary(events)
    out.unparsable = unparsable
    return out


def _summary(events: Iterable[dict[str, Any]]) -> CodexEvents:
    out = CodexEvents()
    tally = codexusage.Tally()
    for event in events:
        out.events += 1
        tally.add(event)
        _event(out, event)
    out.usage = tally.usage
    return out


def _event(out: CodexEvents, event: dict[str, Any]) -> None:
    kind = event.get("type")
    if kind == "thread.started" and isinstance(event.get("thread_id"), str):
        out.thread_id = event["thread_id"]
    elif kind == "turn.completed":
        out.turn_completed = True
    elif kind == "turn.failed":
        err = event.get("error")
        msg = err.get("message") if isinstance(err, dict) else None
        out.failures.append(str(msg or "turn failed"))
    elif kind == "error":
        out.errors.append(str(event.get("message") or "error"))
    elif kind == "item.completed" and isinstance(event.get("item"), dict):
        _item(out, event["item"])


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


def usage_of(record: Mapping[str, Any]) -> Usage:
    """A record's usage: `usage` as written since 0175, or the raw Codex `tokens` object older
    records hold ("unknown" or anything unreadable: unknown)."""
    if "usage" in record:
        return codexusage.from_json(record.get("usage"))
    return codexusage.from_event(record.get("tokens"))


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
    tokens = codexusage.summed(usage_of(a) for a in attempts)
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
            "reported": tokens.usage.as_json(),
            "attempts_with_usage": tokens.runs - tokens.unknown_runs,
            "attempts_unknown": tokens.unknown_runs,
        },
        "recipes": recipes,
        "unreadable_lines": bad,
    }
