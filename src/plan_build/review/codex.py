"""Codex as a reviewer: `codex exec --sandbox read-only --json -o FILE PROMPT`.

stdin is closed (Codex would otherwise wait for it to end), the `-o` file is removed before
every run (Codex keeps an old file's text when a run fails) and lives in the lock directory,
never at the review's path, so a failed or malformed answer never becomes an artifact. A
prompt too long for one argument goes on stdin instead (`-` plus the text, then EOF).

The `--json` event stream tells a failed turn's reason: an authentication failure or a
rate limit is `skipped`; so is a run that outlives its timeout (Codex retries forever
without a network). An answer that is empty or not a review gets one retry with the strict
format reminder, as codex-review does; a second bad answer fails the round.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypedDict, Unpack

from plan_build.review.findings import invalid_reason
from plan_build.review.reviewers import Outcome, classify, keep_log, run_timed

DEFAULT_TIMEOUT = 720.0
ARG_LIMIT = 100_000  # bytes: Linux refuses a single argument over 128 KiB


def timeout_from(env: Mapping[str, str], configured: float | None) -> float:
    """CODEX_CALL_TIMEOUT_SEC (codex-review's variable) wins over review.codex_timeout."""
    raw = (env.get("CODEX_CALL_TIMEOUT_SEC") or "").strip()
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if value > 0:
        return value
    return float(configured) if configured else DEFAULT_TIMEOUT


def model_from(env: Mapping[str, str], configured: str | None) -> str | None:
    for name in ("CODEX_REVIEW_MODEL", "CODEX_REVIEW_LOOP_MODEL"):
        value = (env.get(name) or "").strip()
        if value:
            return value
    return configured or None


def command(out: Path, prompt: str, model: str | None) -> tuple[list[str], str | None]:
    argv = ["codex", "exec", "--sandbox", "read-only", "--json", "-o", str(out)]
    if model:
        argv += ["-m", model]
    if len(prompt.encode("utf-8")) > ARG_LIMIT:
        return [*argv, "-"], prompt
    return [*argv, prompt], None


def events(stdout: str) -> list[dict[str, Any]]:
    out = []
    for raw in stdout.splitlines():
        line = raw.strip()
        if not line.startswith("{"):
            continue
        try:
            event = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(event, dict):
            out.append(event)
    return out


def _failure_message(evs: list[dict[str, Any]], stderr: str) -> str:
    for event in reversed(evs):
        if event.get("type") == "turn.failed":
            err = event.get("error")
            if isinstance(err, dict) and err.get("message"):
                return str(err["message"])
    for event in reversed(evs):
        if event.get("type") == "error" and event.get("message"):
            return str(event["message"])
    tail = [line for line in stderr.strip().splitlines() if line.strip()][-3:]
    return " / ".join(tail)


def _last_message(evs: list[dict[str, Any]]) -> str:
    for event in reversed(evs):
        item = event.get("item")
        if (
            event.get("type") == "item.completed"
            and isinstance(item, dict)
            and item.get("type") == "agent_message"
        ):
            return str(item.get("text") or "")
    return ""


def run_once(
    prompt: str,
    *,
    cwd: Path,
    env: Mapping[str, str],
    out: Path,
    log_dir: Path,
    timeout: float,
    model: str | None,
) -> Outcome:
    argv, stdin = command(out, prompt, model)
    shown = [*argv[:-1], "<prompt>"] if stdin is None else argv
    out.unlink(missing_ok=True)
    result = run_timed(
        "codex",
        argv,
        cwd=cwd,
        env=env,
        timeout=timeout,
        log_dir=log_dir,
        shown=shown,
        input=stdin,
        last=lambda stdout: _failure_message(events(stdout), ""),
    )
    if isinstance(result, Outcome):
        return result
    evs = events(result.stdout)
    failed = any(e.get("type") == "turn.failed" for e in evs)
    if result.returncode != 0 or failed:
        status, reason = classify("codex", _failure_message(evs, result.stderr))
        if status == "failed":
            reason = f"codex exited {result.returncode}: {reason.removeprefix('codex failed: ')}"
        log = keep_log(log_dir, "codex", shown, result.stdout, result.stderr)
        return Outcome("codex", status, reason, seconds=result.seconds, argv=shown, log=log)
    text = ""
    if out.is_file():
        text = out.read_text(encoding="utf-8", errors="replace")
    if not text.strip():
        text = _last_message(evs)
    why = invalid_reason(text)
    if why:
        log = keep_log(
            log_dir, "codex", shown, result.stdout + "\n--- answer ---\n" + text, result.stderr
        )
        return Outcome(
            "codex",
            "failed",
            f"Codex's answer is not a review: {why}",
            text=text,
            seconds=result.seconds,
            argv=shown,
            log=log,
        )
    return Outcome("codex", "ok", None, text=text, seconds=result.seconds, argv=shown)


class Run(TypedDict):
    """`run_once`'s keyword arguments, which `review` passes on to both attempts."""

    cwd: Path
    env: Mapping[str, str]
    out: Path
    log_dir: Path
    timeout: float
    model: str | None


def review(
    render: Callable[[bool], str],
    *,
    on_retry: Callable[[str], None] | None = None,
    **kwargs: Unpack[Run],
) -> Outcome:
    """Run Codex on the prompt; once more with the strict format reminder when the answer
    is not a review. `render(strict)` builds the prompt."""
    first = run_once(render(False), **kwargs)
    if first.ok or first.reason is None or not first.reason.startswith("Codex's answer"):
        return first
    if on_retry:
        on_retry(first.reason)
    second = run_once(render(True), **kwargs)
    second.seconds += first.seconds
    return second


__all__ = [
    "ARG_LIMIT",
    "DEFAULT_TIMEOUT",
    "command",
    "events",
    "model_from",
    "review",
    "run_once",
    "timeout_from",
]
