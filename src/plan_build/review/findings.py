"""Findings: `[SEVERITY-N]` tags in a review, and the decisions written about them.

The tag format, the ledger text and the decision tokens are codex-review's. Where its parser
has bugs, plan-build is correct instead (each difference is listed in docs/review.md):

- an id matches only itself: `HIGH-1` never matches a line about `HIGH-10`;
- a decision is an explicit statement (`Decision: FIX`, or the token in capitals such as a
  table cell `| FIX |`), so prose like "we will fix this later" is not a decision;
- the lines searched for an id's decision stop where another finding's lines begin;
- the findings of a round are the same set for the ledger and for the approval check (the
  first tag of a line); a tag that merely refers to another finding does not add one;
- an unknown word after `Decision:` leaves the finding undecided, with the word kept so
  every command can quote it (codex-review reads `Partially accept` as ACCEPT); only the
  commands that need the decision refuse.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

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
    token: str  # one of DECISIONS ("OPEN" when `unparsed` is set)
    line: int  # 1-based line in the findings file
    unparsed: str | None = None  # the words after 'Decision:' that are no decision

    def describe(self, path: Path) -> str:
        """Why an unparsed decision does not count, for messages."""
        where = f"{path.name} line {self.line}"
        return f"{self.unparsed!r} after 'Decision:' ({where}) is not a decision word"


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


def _token_after_label(rest: str) -> tuple[str | None, str | None]:
    """(token, None) for a known word after the label, (None, words) for an unknown one,
    (None, None) when the label is followed by nothing."""
    rest = rest.lstrip(" \t*_`>-—–\"'[(")
    if not rest.strip():
        return None, None
    m = _LABELLED.match(rest)
    if m:
        word = re.sub(r"[^A-Za-z]", "", m.group(1)).upper()
        if word.startswith("WONT"):
            return "WONTFIX", None
        return {
            "ACCEPTED": "ACCEPT",
            "REJECTED": "REJECT",
            "DEFERRED": "DEFER",
            "FIXED": "FIX",
        }.get(word, word), None
    shown = rest.strip().rstrip(" *_`|").strip()
    return None, (shown[:57] + "...") if len(shown) > 60 else shown


def _decision_in_line(line: str, line_no: int) -> Decision | None:
    label = _LABEL.search(line)
    if label:
        token, unparsed = _token_after_label(line[label.end() :])
        if token is not None:
            return Decision(token, line_no)
        if unparsed is not None:
            return Decision("OPEN", line_no, unparsed)
    m = _CAPITALS.search(line)
    return Decision(m.group(1), line_no) if m else None


def decisions(findings: Sequence[Finding], text: str) -> dict[str, Decision | None]:
    """Each finding's decision in a findings file, or None when it has none.

    For every line that names the id, that line and up to WINDOW lines after it are searched,
    stopping before a line that names only other findings. The first decision found wins; an
    unknown word after 'Decision:' is found too (token OPEN, `unparsed` set) and never raises.
    """
    lines = text.split("\n")
    mentions: list[set[str]] = [
        {f"{m.group(1)}-{m.group(2)}" for m in ANY_ID.finditer(line)} for line in lines
    ]
    # the lines naming each id, as ANY_ID bounds it (no pattern compiled per finding)
    named: dict[str, list[int]] = {}
    for no, ids in enumerate(mentions):
        for fid in ids:
            named.setdefault(fid, []).append(no)
    out: dict[str, Decision | None] = {}
    for finding in findings:
        fid = finding.id
        result: Decision | None = None
        for start in named.get(fid, ()):
            for j in range(start, min(start + WINDOW + 1, len(lines))):
                if j > start and mentions[j] and fid not in mentions[j]:
                    break
                result = _decision_in_line(lines[j], j + 1)
                if result is not None:
                    break
            if result is not None:
                break
        out[fid] = result
    return out


_REASON_ON_LINE = re.compile(r"(?i)\b(?:ACCEPT|REJECT|DEFER|WONTFIX|FIX)(?:ED)?\b[\s:|*—–-]*(.*)$")


def reason(text: str, decision: Decision) -> str | None:
    """Why, as the findings file says it: the words after the decision on its line
    (`Decision: REJECT - checked upstream`), else the lines under it up to a blank line, a
    heading or another finding's or decision's line (docs/review.md's shape); None if none."""
    lines = text.split("\n")
    if not 0 < decision.line <= len(lines):
        return None
    m = _REASON_ON_LINE.search(lines[decision.line - 1])
    said = m.group(1).strip(" |*") if m else ""
    if said:
        return said
    under: list[str] = []
    for line in lines[decision.line :]:
        bare = line.strip()
        if not bare or bare.startswith("#") or ANY_ID.search(bare) or _LABEL.search(bare):
            break
        under.append(bare)
    return sanitize(" ".join(under)) or None


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
    "reason",
    "sanitize",
]
