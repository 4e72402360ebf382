"""CodeRabbit as a reviewer of the local change.

It runs in the repository root (never `--cwd`, which newer CLIs dropped): `coderabbit review
--agent --uncommitted` on CLI 0.4 and later, whose NDJSON events plan-build reads (plus
`--include-untracked` when `coderabbit review --help` lists it, so new files are reviewed), and
`coderabbit review --plain --type uncommitted --no-color` before that. Both output forms are
accepted from either command. A review can take up to 30 minutes; a heartbeat shows it is
alive. Authentication failures, rate limits, timeouts and "nothing to review" are `skipped`
with their reason - never a clean review.

Severities map onto the ledger's four: critical → CRITICAL, major → HIGH, minor → MEDIUM,
trivial/info/none → LOW. Plain output has only a type: potential_issue → MEDIUM,
refactor_suggestion and nitpick → LOW, anything else → MEDIUM.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from plan_build.core import proc, tools
from plan_build.review.findings import SEVERITIES, TAG, sanitize
from plan_build.review.reviewers import Outcome, RawFinding, classify, keep_log, run_timed, tail

DEFAULT_TIMEOUT = 1800.0
ENDED_EARLY = "CodeRabbit's output ended before its complete event"
AGENT_SINCE = (0, 4)
SEVERITY = {
    "critical": "CRITICAL",
    "major": "HIGH",
    "minor": "MEDIUM",
    "trivial": "LOW",
    "info": "LOW",
    "none": "LOW",
}
PLAIN_TYPE = {"potential_issue": "MEDIUM", "refactor_suggestion": "LOW", "nitpick": "LOW"}
_SEPARATOR = re.compile(r"^={10,}\s*$", re.MULTILINE)


def version(
    env: Mapping[str, str], cwd: Path, cancel: threading.Event | None = None
) -> tuple[int, ...] | None:
    """The CLI's version as numbers (None: missing, hanging, failing, or no version printed).
    Asked afresh (tools.ask, not the version cache): one call is noise beside a review."""
    a = tools.ask("coderabbit", ["--version"], env=env, cwd=cwd, timeout=30, cancel=cancel)
    if a.error is not None:
        raise a.error
    return a.numbers


def supports_untracked(
    env: Mapping[str, str], cwd: Path, cancel: threading.Event | None = None
) -> bool:
    """Whether `coderabbit review` knows --include-untracked (current CLIs leave raw untracked
    files out of --uncommitted without it). Probes honour `cancel` like the review itself: a
    failed Codex review must not wait out a hanging probe."""
    a = tools.ask("coderabbit", ["review", "--help"], env=env, cwd=cwd, timeout=30, cancel=cancel)
    if a.error is not None:
        raise a.error
    return "--include-untracked" in a.text


def command(ver: tuple[int, ...] | None, *, untracked: bool = False) -> list[str]:
    if ver is not None and ver >= AGENT_SINCE:
        argv = ["coderabbit", "review", "--agent", "--uncommitted"]
        return [*argv, "--include-untracked"] if untracked else argv
    return ["coderabbit", "review", "--plain", "--type", "uncommitted", "--no-color"]


def _json_lines(text: str) -> list[dict[str, Any]] | None:
    """The stream's events, or None when the output is not NDJSON."""
    events: list[dict[str, Any]] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if not line.startswith("{"):
            return events or None
        try:
            event = json.loads(line)
        except (ValueError, RecursionError):
            return events or None
        if isinstance(event, dict) and "type" in event:
            events.append(event)
    return events or None


def _agent_finding(event: dict[str, Any]) -> RawFinding:
    severity = SEVERITY.get(str(event.get("severity") or "").lower(), "MEDIUM")
    body = str(event.get("comment") or event.get("codegenInstructions") or "").strip()
    title = next((ln.strip() for ln in body.splitlines() if ln.strip()), "CodeRabbit finding")
    where = str(event.get("fileName") or "")
    line = event.get("line") or event.get("startLine")
    if where and isinstance(line, int | str) and str(line):
        where = f"{where}:{line}"
    comment = str(event.get("comment") or "").strip()
    detail = str(event.get("codegenInstructions") or "").strip() if comment else ""
    rest = "\n".join(body.splitlines()[1:]).strip()
    return RawFinding(severity, title, where, "\n\n".join(p for p in (rest, detail) if p))


def read_agent(events: list[dict[str, Any]]) -> Outcome:
    findings: list[RawFinding] = []
    complete: dict[str, Any] | None = None
    skipped: str | None = None
    for event in events:
        kind = event.get("type")
        if kind == "finding":
            findings.append(_agent_finding(event))
        elif kind == "error":
            error_type = str(event.get("errorType") or "")
            message = str(event.get("message") or event.get("error") or error_type or "error")
            meta = event.get("metadata")
            wait = meta.get("waitTime") if isinstance(meta, dict) else None
            if error_type == "rate_limit":
                after = f"; retry in {wait}" if wait else ""
                return Outcome("coderabbit", "skipped", f"rate limited ({message}{after})")
            if error_type == "auth":
                return Outcome("coderabbit", "skipped", f"authentication failed ({message})")
            status, reason = classify("coderabbit", message)
            return Outcome("coderabbit", status, reason)
        elif kind == "status" and "skip" in str(event.get("status") or ""):
            skipped = str(event.get("message") or event.get("status"))
        elif kind == "complete":
            complete = event
    if complete is None:
        return Outcome("coderabbit", "failed", ENDED_EARLY)
    state = " ".join(str(complete.get(k) or "") for k in ("status", "outcome")).lower()
    if skipped or "skip" in state:
        message = str(complete.get("message") or skipped or "nothing to review")
        return Outcome("coderabbit", "skipped", f"CodeRabbit did not review: {message}")
    if "fail" in state or "error" in state or "incomplete" in state:
        message = str(complete.get("message") or state)
        return Outcome("coderabbit", "failed", f"CodeRabbit's review did not complete: {message}")
    return Outcome("coderabbit", "ok", None, findings=findings)


def _field(section: str, label: str) -> str:
    m = re.search(rf"^{re.escape(label)}[ \t]*(.*)$", section, re.MULTILINE)
    return m.group(1).strip() if m else ""


def _block(section: str, label: str) -> str:
    m = re.search(
        rf"^{re.escape(label)}[ \t]*\n(.*?)(?=^[A-Z][A-Za-z ]*:[ \t]*$|\Z)",
        section,
        re.MULTILINE | re.DOTALL,
    )
    return m.group(1).strip() if m else ""


def read_plain(text: str) -> Outcome:
    lowered = text.lower()
    parts = _SEPARATOR.split(text.replace("\r\n", "\n"))
    sections = [p for p in parts[1:] if "File:" in p]
    if not sections:
        if re.search(r"no (?:files|changes) to review|nothing to review", lowered):
            return Outcome("coderabbit", "skipped", "CodeRabbit did not review: no changes")
        if "review completed" in lowered:
            return Outcome("coderabbit", "ok", None)
        return Outcome(
            "coderabbit",
            "failed",
            "CodeRabbit's output has neither findings nor 'Review completed'",
        )
    findings = []
    for section in sections:
        where = _field(section, "File:")
        lines = _field(section, "Line:")
        if lines:
            where = f"{where}:{lines.replace(' to ', '-')}"
        declared = _field(section, "Severity:").lower()
        kind = _field(section, "Type:").lower()
        severity = SEVERITY.get(declared) or PLAIN_TYPE.get(kind, "MEDIUM")
        comment = _block(section, "Comment:")
        title = next(
            (ln.strip() for ln in comment.splitlines() if ln.strip()), "CodeRabbit finding"
        )
        rest = "\n".join(comment.splitlines()[1:]).strip()
        prompt = _block(section, "Prompt for AI Agent:")
        detail = "\n\n".join(p for p in (rest, prompt) if p)
        findings.append(RawFinding(severity, title, where, detail))
    return Outcome("coderabbit", "ok", None, findings=findings)


def review(
    *,
    cwd: Path,
    env: Mapping[str, str],
    log_dir: Path,
    timeout: float,
    cancel: threading.Event | None = None,
) -> Outcome:
    if proc.which("coderabbit", env) is None:
        return Outcome("coderabbit", "skipped", "coderabbit is not installed (not on PATH)")
    ver = version(env, cwd, cancel)
    agent = ver is not None and ver >= AGENT_SINCE
    argv = command(ver, untracked=agent and supports_untracked(env, cwd, cancel))
    result = run_timed(
        "coderabbit",
        argv,
        cwd=cwd,
        env=env,
        timeout=timeout,
        log_dir=log_dir,
        cancel=cancel,
    )
    if isinstance(result, Outcome):
        return result
    events = _json_lines(result.stdout)
    if events is not None:
        outcome = read_agent(events)
        if result.returncode != 0 and (outcome.ok or outcome.reason == ENDED_EARLY):
            outcome = _crashed(result)  # a crash after partial output: say what it said
    elif result.returncode != 0:
        outcome = _crashed(result)
    else:
        outcome = read_plain(result.stdout)
    outcome.seconds = result.seconds
    outcome.argv = argv
    outcome.exit_code = result.returncode
    if not outcome.ok:
        outcome.stderr_tail = tail(result.stderr) or None
        outcome.log = keep_log(log_dir, "coderabbit", argv, result.stdout, result.stderr)
    return outcome


def _crashed(result: proc.Completed) -> Outcome:
    """A CodeRabbit that exited non-zero: skipped for an auth failure or a rate limit, else
    failed with its exit status and the end of its stderr."""
    status, reason = classify("coderabbit", result.stderr + "\n" + result.stdout)
    if status == "failed":
        last = " / ".join(tail(result.stderr, lines=3).splitlines()) or "nothing on stderr"
        reason = f"coderabbit exited {result.returncode}: {last[:300]}"
    return Outcome("coderabbit", status, reason)


def _neutral(text: str) -> str:
    """CodeRabbit's text with anything that looks like a [SEVERITY-N] tag defused."""
    return TAG.sub(lambda m: f"({m.group(1)}-{m.group(2)})", text)


def section(outcome: Outcome, taken: Mapping[str, int]) -> tuple[str, list[str]]:
    """The CodeRabbit part of a review file, numbering findings after the ids Codex used.

    Returns the text and the ids it assigned."""
    from plan_build.review.findings import CODERABBIT_MARKER

    lines = ["", CODERABBIT_MARKER, "## CodeRabbit", ""]
    ids: list[str] = []
    if not outcome.ok:
        lines.append(f"CodeRabbit did not review this round: {outcome.reason}.")
        return "\n".join(lines) + "\n", ids
    if not outcome.findings:
        lines.append("CodeRabbit reported no findings.")
        return "\n".join(lines) + "\n", ids
    counters = {sev: taken.get(sev, 0) for sev in SEVERITIES}
    order = sorted(outcome.findings, key=lambda f: SEVERITIES.index(f.severity))
    for finding in order:
        counters[finding.severity] += 1
        fid = f"{finding.severity}-{counters[finding.severity]}"
        ids.append(fid)
        where = f"`{sanitize(finding.location)}` " if finding.location else ""
        lines.append(f"- [{fid}] {where}{_neutral(sanitize(finding.title))}")
        for detail in finding.detail.splitlines():
            lines.append(f"  > {_neutral(detail)}".rstrip())
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n", ids


__all__ = ["DEFAULT_TIMEOUT", "command", "read_agent", "read_plain", "review", "section", "version"]
