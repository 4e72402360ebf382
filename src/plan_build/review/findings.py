"""Findings: `[SEVERITY-N]` tags in a review, and the decisions written about them.

The tag format, the ledger text and the decision tokens are codex-review's. Where its parser
has bugs, plan-build is correct instead (each difference is listed in docs/review.md):

- an id matches only itself: `HIGH-1` never matches a line about `HIGH-10`;
- a decision is an explicit statement (`Decision: FIX`, or the token in capitals such as a
  table cell `| FIX |`), so prose like "we will fix this later" is not a decision;
- the lines searched for an id's decision stop where another finding's lines begin;
- the findings of a round are the same set for the ledger and for the approval check (the
  first tag of a line); a tag that merely refers to another finding does not add one;
- an unknown token after `Decision:` is an error naming the file and line, not "open".
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from plan_build.errors import usage

SEVERITIES = ("CRITICAL", "HIGH", "MEDIUM", "LOW")
TAG = re.compile(r"\[(CRITICAL|HIGH|MEDIUM|LOW)-(\d+)\]")
ANY_ID = re.compile(r"(?<![A-Za-z0-9_])(CRITICAL|HIGH|MEDIUM|LOW)-(\d+)(?![0-9])")
DECISIONS = ("ACCEPT", "REJECT", "DEFER", "FIX", "WONTFIX", "OPEN")
NO_TEXT = "(no inline description)"
WINDOW = 8  # lines after an id's line that may hold its decision
CODERABBIT_MARKER = "<!-- plan-build:coderabbit -->"

_LABEL = re.compile(r"decision[\s*_]*:", re.IGNORECASE)
_LABELLED = re.compile(
    r"(won['’]?t[\s_-]?fix|wontfix|accept(?:ed)?|reject(?:ed)?|defer(?:red)?|fix(?:ed)?|open)"
    r"(?![A-Za-z])",
    re.IGNORECASE,
)
_WORD = re.compile(r"[^\s*_`|.,;:()\[\]]+")
_CAPITALS = re.compile(r"(?<![A-Za-z])(ACCEPT|REJECT|DEFER|WONTFIX|FIX)(?![A-Za-z])")


@dataclass(frozen=True)
class Finding:
    id: str  # "HIGH-2"
    severity: str  # "HIGH"
    number: int
    text: str  # the rest of the tag's line, sanitized
    reviewer: str  # "codex" or "coderabbit"
    line: int  # 1-based line in the review


@dataclass(frozen=True)
class Decision:
    token: str  # one of DECISIONS
    line: int  # 1-based line in the findings file


def sanitize(text: str) -> str:
    """One line of ledger text: no TAB/CR/LF, whitespace runs collapsed, ends trimmed."""
    return " ".join(text.split())


def extract(review: str) -> list[Finding]:
    """The findings of a review: the first tag on each line, each id once.

    Tags after plan-build's CodeRabbit marker line belong to CodeRabbit, the rest to Codex.
    """
    found: list[Finding] = []
    seen: set[str] = set()
    reviewer = "codex"
    for number, line in enumerate(review.split("\n"), start=1):
        if line.strip() == CODERABBIT_MARKER:
            reviewer = "coderabbit"
            continue
        m = TAG.search(line)
        if not m:
            continue
        fid = f"{m.group(1)}-{m.group(2)}"
        if fid in seen:
            continue
        seen.add(fid)
        text = sanitize(line[m.end() :]) or NO_TEXT
        found.append(Finding(fid, m.group(1), int(m.group(2)), text, reviewer, number))
    return found


def all_tag_ids(review: str) -> set[str]:
    return {f"{m.group(1)}-{m.group(2)}" for m in TAG.finditer(review)}


def _id_pattern(fid: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![A-Za-z0-9_]){re.escape(fid)}(?![0-9])")


def _token_after_label(rest: str, path: Path, line_no: int, fid: str) -> str | None:
    rest = rest.lstrip(" \t*_`>-—–\"'[(")
    if not rest.strip():
        return None
    m = _LABELLED.match(rest)
    if m:
        word = re.sub(r"[^A-Za-z]", "", m.group(1)).upper()
        if word.startswith("WONT"):
            return "WONTFIX"
        return {
            "ACCEPTED": "ACCEPT",
            "REJECTED": "REJECT",
            "DEFERRED": "DEFER",
            "FIXED": "FIX",
        }.get(word, word)
    bad = _WORD.match(rest)
    shown = bad.group(0) if bad else rest.split()[0]
    raise usage(
        f"{path.name} line {line_no}: unknown decision {shown!r} for {fid}",
        f"write one of {', '.join(DECISIONS)} after 'Decision:' (e.g. 'Decision: FIX')",
    )


def _decision_in_line(line: str, path: Path, line_no: int, fid: str) -> str | None:
    label = _LABEL.search(line)
    if label:
        token = _token_after_label(line[label.end() :], path, line_no, fid)
        if token is not None:
            return token
    m = _CAPITALS.search(line)
    return m.group(1) if m else None


def decisions(findings: Sequence[Finding], text: str, path: Path) -> dict[str, Decision | None]:
    """Each finding's decision in a findings file, or None when it has none.

    For every line that names the id, that line and up to WINDOW lines after it are searched,
    stopping before a line that names only other findings. The first decision found wins.
    """
    lines = text.split("\n")
    mentions: list[set[str]] = [
        {f"{m.group(1)}-{m.group(2)}" for m in ANY_ID.finditer(line)} for line in lines
    ]
    out: dict[str, Decision | None] = {}
    for finding in findings:
        fid = finding.id
        pattern = _id_pattern(fid)
        result: Decision | None = None
        for start, line in enumerate(lines):
            if fid not in mentions[start] or not pattern.search(line):
                continue
            for j in range(start, min(start + WINDOW + 1, len(lines))):
                if j > start and mentions[j] and fid not in mentions[j]:
                    break
                token = _decision_in_line(lines[j], path, j + 1, fid)
                if token is not None:
                    result = Decision(token, j + 1)
                    break
            if result is not None:
                break
        out[fid] = result
    return out


def decided(decision: Decision | None) -> bool:
    return decision is not None and decision.token != "OPEN"  # noqa: S105 - not a secret


# --- is a Codex answer a review at all? (codex-review's acceptance rules) -------------------

_FALLBACK = re.compile(
    r"review session timed out|timed out during.{0,80}review|findings extracted from.{0,80}"
    r"analysis log|extracted from codex analysis log",
    re.IGNORECASE,
)
_SKIPPED = re.compile(
    r"review was skipped|skipped due|not a git repository|(?:cannot|unable to) run git diff"
    r"|no git repo|missing git repo",
    re.IGNORECASE,
)
_NO_FINDINGS = re.compile(r"no findings", re.IGNORECASE)


def invalid_reason(text: str) -> str | None:
    """Why `text` is not an acceptable review, or None when it is one."""
    if not text.strip():
        return "the answer was empty"
    if _FALLBACK.search(text):
        return "the answer is a timeout fallback, not a review"
    if TAG.search(text):
        return None
    if _SKIPPED.search(text):
        return "the answer says the review was skipped"
    if _NO_FINDINGS.search(text) and all(
        re.search(rf"{sev}:\s*\d+", text, re.IGNORECASE) for sev in SEVERITIES
    ):
        return None
    return "it has no [SEVERITY-N] findings and no 'No findings.' summary with all four counts"


__all__ = [
    "ANY_ID",
    "CODERABBIT_MARKER",
    "DECISIONS",
    "NO_TEXT",
    "SEVERITIES",
    "TAG",
    "Decision",
    "Finding",
    "all_tag_ids",
    "decided",
    "decisions",
    "extract",
    "invalid_reason",
    "sanitize",
]
