"""The plan under review: the session's native Claude plan, and `artifacts/plan.md`.

`artifacts/plan.md` is the canonical plan. It is seeded once - from `--plan PATH`, or else
from the plan the current Claude session wrote - and afterwards only `--plan` replaces it;
implementation reviews always compare against it.

The native plan is found in the session's transcript (`~/.claude/projects/*/<id>.jsonl`):
files the session wrote, edited or read, and `.claude/plans/<name>.md` mentions, ranked as
codex-review ranks them. Differences (docs/review.md#differences): only files inside a plans
directory count (codex-review accepts any absolute `.md` path the session touched, such as
a README), and with no Claude session plan-build asks for `--plan` instead of taking the
newest plan on disk, which may belong to another session.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from plan_build.core.claudesessions import ClaudeSession, claude_dir
from plan_build.core.errors import ExitCode, PlanBuildError, usage
from plan_build.review.workflowfile import project_key

MAX_LINE = 16 * 1024 * 1024
MENTION = re.compile(r"\.claude/plans/([^\s\"'`]+\.md)")
KIND_RANK = {"tool_result": 3, "write": 2, "edit": 2, "multiedit": 2, "read": 1, "snapshot": 0}


@dataclass(frozen=True)
class Candidate:
    path: Path
    structured: bool
    time: _dt.datetime | None
    line: int
    kind: str

    def rank(self) -> tuple[int, float, int, int]:
        moment = self.time.timestamp() if self.time else float("-inf")
        return (int(self.structured), moment, self.line, KIND_RANK.get(self.kind, 0))


def _time(value: Any) -> _dt.datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        when = _dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=_dt.UTC)


def plan_dirs(env: Mapping[str, str], cwd: str) -> list[Path]:
    """~/.claude/plans plus a project's `plansDirectory` setting, when one is configured."""
    dirs = [claude_dir(env) / "plans"]
    if cwd:
        for settings in (
            Path(cwd) / ".claude" / "settings.local.json",
            Path(cwd) / ".claude" / "settings.json",
            claude_dir(env) / "settings.json",
        ):
            try:
                data = json.loads(settings.read_text(encoding="utf-8"))
            except (OSError, ValueError, RecursionError):
                continue
            custom = data.get("plansDirectory") if isinstance(data, dict) else None
            if isinstance(custom, str) and custom:
                dirs.append((Path(cwd) / custom).resolve())
                break
    return dirs


def _usable(path: Path, dirs: list[Path]) -> bool:
    if path.suffix != ".md" or "-agent-" in path.name:
        return False
    try:
        real = path.resolve()
    except OSError:
        return False
    if not any(real.is_relative_to(d.resolve()) for d in dirs):
        return False
    try:
        return real.is_file() and real.stat().st_size > 0
    except OSError:
        return False


def _lines(transcript: Path) -> Iterator[tuple[int, bytes]]:
    with transcript.open("rb") as fh:
        number = 0
        while True:
            line = fh.readline(MAX_LINE + 1)
            if not line:
                return
            number += 1
            if len(line) > MAX_LINE:
                while line and not line.endswith(b"\n"):  # skip the rest of an over-long line
                    line = fh.readline(MAX_LINE)
                continue
            yield number, line


def candidates(
    transcript: Path, env: Mapping[str, str], cwd: str, dirs: list[Path]
) -> list[Candidate]:
    home_plans = claude_dir(env) / "plans"
    found: list[Candidate] = []

    def add(raw: Any, structured: bool, when: Any, number: int, kind: str) -> None:
        if not isinstance(raw, str) or not raw:
            return
        path = Path(raw)
        if not path.is_absolute():
            if ".claude/plans/" not in raw:
                return
            path = Path(cwd or ".") / path
        if _usable(path, dirs):
            found.append(Candidate(path, structured, _time(when), number, kind))

    for number, raw_line in _lines(transcript):
        text = raw_line.decode("utf-8", "replace")
        for m in MENTION.finditer(text):
            add(str(home_plans / Path(m.group(1)).name), False, None, number, "mention")
        try:
            obj = json.loads(text)
        except (ValueError, RecursionError):
            continue
        if not isinstance(obj, dict):
            continue
        stamp = obj.get("timestamp")
        snapshot = obj.get("snapshot")
        if isinstance(snapshot, dict):
            backups = snapshot.get("trackedFileBackups")
            if isinstance(backups, dict):
                for key in backups:
                    add(key, True, snapshot.get("timestamp") or stamp, number, "snapshot")
        message = obj.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            for item in content:
                if isinstance(item, dict) and item.get("type") == "tool_use":
                    args = item.get("input")
                    if isinstance(args, dict):
                        name = str(item.get("name") or "").lower()
                        add(args.get("file_path"), True, stamp, number, name)
        result = obj.get("toolUseResult")
        if isinstance(result, dict):
            add(result.get("filePath"), True, stamp, number, "tool_result")
    return found


def transcripts(env: Mapping[str, str], session: ClaudeSession) -> list[Path]:
    projects = claude_dir(env) / "projects"
    name = f"{session.session_id}.jsonl"
    first = projects / project_key(session.cwd) / name
    out = [first] if first.is_file() else []
    if projects.is_dir():
        out.extend(p for p in sorted(projects.glob(f"*/{name}")) if p != first and p.is_file())
    return out


def native_plan(env: Mapping[str, str], session: ClaudeSession | None) -> Path:
    """The plan file the current Claude session wrote, or an error saying how to name one."""
    if session is None:
        raise usage(
            "there is no Claude Code session to take the plan from",
            "pass the plan explicitly: plan-build review.plan --plan PATH",
        )
    dirs = plan_dirs(env, session.cwd)
    for transcript in transcripts(env, session):
        found = candidates(transcript, env, session.cwd, dirs)
        if found:
            return max(found, key=Candidate.rank).path
    raise PlanBuildError(
        f"no Claude plan file found for session {session.session_id}",
        "save the plan to a file and pass it: plan-build review.plan --plan PATH",
        code=ExitCode.USAGE,
    )


def read_plan(path: Path, shown: str) -> bytes:
    """A plan's bytes; it must be a readable, non-blank regular file."""
    try:
        if not path.is_file():
            raise usage(f"plan {shown} is not a file", "pass the path of a markdown plan")
        data = path.read_bytes()
    except OSError as exc:
        raise usage(f"cannot read plan {shown}: {exc.strerror}", "check the path") from exc
    if not data.strip():
        raise usage(f"plan {shown} is empty", "write the plan first, then pass it with --plan")
    return data


def source_path(given: str, cwd: Path, root: Path) -> tuple[Path, str]:
    """Where `--plan` points (resolved from the user's cwd), and how to record it: relative
    to the project root when inside it, else absolute."""
    path = Path(given).expanduser()
    path = path if path.is_absolute() else (cwd / path)
    absolute = Path(os.path.normpath(path))
    try:
        return absolute, str(absolute.relative_to(root))
    except ValueError:
        return absolute, str(absolute)


__all__ = [
    "Candidate",
    "candidates",
    "native_plan",
    "plan_dirs",
    "read_plan",
    "source_path",
    "transcripts",
]
