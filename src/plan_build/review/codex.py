"""Codex as a reviewer: `codex exec --sandbox read-only --json -o FILE PROMPT`.

stdin is closed (Codex would otherwise wait for it to end), the `-o` file is removed before
every run (Codex keeps an old file's text when a run fails) and lives in the lock directory,
never at the review's path, so a failed or malformed answer never becomes an artifact. A
prompt too long for one argument goes on stdin instead (`-` plus the text, then EOF).

The `--json` event stream tells a failed turn's reason: an authentication failure or a
rate limit is `skipped`; so is a run that outlives its timeout (Codex retries forever
without a network). An answer that is empty or not a review gets one retry with the strict
format reminder, as codex-review does; a second bad answer fails the round. The stream goes
to a file beside the `-o` file and is read a line at a time; its `turn.completed` usage is
the run's token use (`codexusage`), kept in the round record.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict, Unpack

from plan_build.core import codexusage
from plan_build.core.codexusage import Usage
from plan_build.review.findings import invalid_reason
from plan_build.review.reviewers import Outcome, bounded_text, classify, keep_log, run_timed

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


@dataclass
class Scan:
    """What one run's event stream said, read once from start to end."""

    failed: bool = False  # a turn.failed event
    failure: str = ""  # the last turn.failed message, else the last error event's
    error: str = ""
    message: str = ""  # the last agent message
    usage: Usage = codexusage.UNKNOWN

    def failure_message(self, stderr: str) -> str:
        if self.failure or self.error:
            return self.failure or self.error
        tail = [line for line in stderr.strip().splitlines() if line.strip()][-3:]
        return " / ".join(tail)


def scan(evs: Iterable[dict[str, Any]]) -> Scan:
    out = Scan()
    tally = codexusage.Tally()
    for event in evs:
        tally.add(event)
        kind = event.get("type")
        if kind == "turn.failed":
            out.failed = True
            err = event.get("error")
            if isinstance(err, dict) and err.get("message"):
                out.failure = str(err["message"])
        elif kind == "error" and event.get("message"):
            out.error = str(event["message"])
        elif kind == "item.completed":
            item = event.get("item")
            if isinstance(item, dict) and item.get("type") == "agent_message":
                out.message = str(item.get("text") or "")
    out.usage = tally.usage
    return out


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
    stream = out.with_name(f"{out.stem}.events.jsonl")
    result = run_timed(
        "codex",
        argv,
        cwd=cwd,
        env=env,
        timeout=timeout,
        log_dir=log_dir,
        shown=shown,
        input=stdin,
        last=lambda _: scan(codexusage.events(stream)).failure_message(""),
        stdout_file=stream,
    )
    if isinstance(result, Outcome):
        result.usages = [codexusage.of_file(stream)]  # a timeout: what had completed, if any
        return result
    said = scan(codexusage.events(stream))
    usages = [said.usage]
    if result.returncode != 0 or said.failed:
        status, reason = classify("codex", said.failure_message(result.stderr))
        if status == "failed":
            reason = f"codex exited {result.returncode}: {reason.removeprefix('codex failed: ')}"
        log = keep_log(log_dir, "codex", shown, bounded_text(stream), result.stderr)
        return Outcome(
            "codex", status, reason, seconds=result.seconds, argv=shown, log=log, usages=usages
        )
    text = ""
    if out.is_file():
        text = out.read_text(encoding="utf-8", errors="replace")
    if not text.strip():
        text = said.message
    why = invalid_reason(text)
    if why:
        log = keep_log(
            log_dir,
            "codex",
            shown,
            bounded_text(stream) + "\n--- answer ---\n" + text,
            result.stderr,
        )
        return Outcome(
            "codex",
            "failed",
            f"Codex's answer is not a review: {why}",
            text=text,
            seconds=result.seconds,
            argv=shown,
            log=log,
            usages=usages,
        )
    return Outcome(
        "codex", "ok", None, text=text, seconds=result.seconds, argv=shown, usages=usages
    )


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
    second.usages = first.usages + second.usages  # both runs used tokens
    return second


__all__ = [
    "ARG_LIMIT",
    "DEFAULT_TIMEOUT",
    "Scan",
    "command",
    "model_from",
    "review",
    "run_once",
    "scan",
    "timeout_from",
]
