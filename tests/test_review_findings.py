"""Reading reviews and decisions: [SEVERITY-N] tags, the findings they define, and the
decision each finding got - correct where codex-review's parser has bugs."""

from __future__ import annotations

from pathlib import Path

import pytest

from plan_build.review.findings import (
    CODERABBIT_MARKER,
    Decision,
    decided,
    decisions,
    extract,
    invalid_reason,
    sanitize,
)

FINDINGS = Path("plan-findings-r1.md")


def tokens(review: str, response: str) -> dict[str, str | None]:
    found = extract(review)
    got = decisions(found, response)
    return {fid: (d.token if d else None) for fid, d in got.items()}


def test_each_line_contributes_its_first_tag_and_each_id_counts_once() -> None:
    review = (
        "Intro without tags\n"
        "[HIGH-1] Missing\ttests   for the parser.  See also [LOW-1].\n"
        "- **[LOW-1]** Typo\n"
        "[HIGH-1] repeated id is ignored\n"
        "[MEDIUM-2]\n"
    )
    found = extract(review)
    assert [(f.id, f.severity, f.text, f.line) for f in found] == [
        ("HIGH-1", "HIGH", "Missing tests for the parser. See also [LOW-1].", 2),
        ("LOW-1", "LOW", "** Typo", 3),
        ("MEDIUM-2", "MEDIUM", "(no inline description)", 5),
    ]
    assert {f.reviewer for f in found} == {"codex"}


def test_tags_after_the_coderabbit_marker_belong_to_coderabbit() -> None:
    review = f"[HIGH-1] codex says\n\n{CODERABBIT_MARKER}\n## CodeRabbit\n- [HIGH-2] rabbit says\n"
    assert [(f.id, f.reviewer) for f in extract(review)] == [
        ("HIGH-1", "codex"),
        ("HIGH-2", "coderabbit"),
    ]


def test_lowercase_or_unbracketed_ids_are_not_tags() -> None:
    assert extract("[high-1] no\nHIGH-2 no\n[HIGHEST-1] no\n") == []


def test_decision_label_in_the_usual_markdown_shapes() -> None:
    review = "[HIGH-1] a\n[HIGH-2] b\n[MEDIUM-1] c\n[LOW-1] d\n[LOW-2] e\n"
    response = (
        "### HIGH-1\n**Decision:** fix\n\n"
        "### HIGH-2\n- Decision: **REJECT** because it is wrong\n\n"
        "## MEDIUM-1\n**Decision: Won't fix**\n\n"
        "LOW-1: decision: deferred\n\n"
        "### LOW-2\nDecision: OPEN\n"
    )
    assert tokens(review, response) == {
        "HIGH-1": "FIX",
        "HIGH-2": "REJECT",
        "MEDIUM-1": "WONTFIX",
        "LOW-1": "DEFER",
        "LOW-2": "OPEN",
    }


def test_a_table_cell_in_capitals_is_a_decision() -> None:
    review = "[HIGH-1] a\n[LOW-1] b\n"
    response = "| id | decision |\n|---|---|\n| HIGH-1 | FIX |\n| LOW-1 | WONTFIX |\n"
    assert tokens(review, response) == {"HIGH-1": "FIX", "LOW-1": "WONTFIX"}


def test_high_1_does_not_match_the_line_about_high_10() -> None:
    # codex-review takes HIGH-10's decision for HIGH-1 (substring match).
    review = "".join(f"[HIGH-{n}] finding {n}\n" for n in range(1, 11))
    response = "### HIGH-10\nDecision: REJECT\n\n### HIGH-1\nDecision: FIX\n"
    got = tokens(review, response)
    assert got["HIGH-10"] == "REJECT"
    assert got["HIGH-1"] == "FIX"
    assert got["HIGH-2"] is None


def test_prose_is_not_a_decision() -> None:
    # codex-review reads "we will fix" as FIX.
    review = "[HIGH-1] a\n"
    response = "### HIGH-1\nWe will fix this once the parser is stable; reject for now?\n"
    assert tokens(review, response) == {"HIGH-1": None}


def test_the_search_stops_where_the_next_finding_begins() -> None:
    # codex-review's 8-line window runs into LOW-1's block and takes its DEFER.
    review = "[HIGH-1] a\n[LOW-1] b\n"
    response = "### HIGH-1\nStill thinking.\n\n### LOW-1\nDecision: DEFER\n"
    assert tokens(review, response) == {"HIGH-1": None, "LOW-1": "DEFER"}


def test_a_later_mention_can_carry_the_decision() -> None:
    review = "[HIGH-1] a\n[HIGH-2] b\n"
    response = (
        "We address HIGH-1 and HIGH-2 below.\n\n"
        "### HIGH-1\nDecision: FIX\n\n### HIGH-2\nDecision: REJECT\n"
    )
    assert tokens(review, response) == {"HIGH-1": "FIX", "HIGH-2": "REJECT"}


def test_one_decision_line_can_cover_several_ids() -> None:
    review = "[LOW-1] a\n[LOW-2] b\n"
    assert tokens(review, "LOW-1, LOW-2 — Decision: REJECT (style only)\n") == {
        "LOW-1": "REJECT",
        "LOW-2": "REJECT",
    }


def test_decision_more_than_eight_lines_below_is_not_seen() -> None:
    review = "[HIGH-1] a\n"
    response = "### HIGH-1\n" + "context\n" * 8 + "Decision: FIX\n"
    assert tokens(review, response) == {"HIGH-1": None}
    assert tokens(review, "### HIGH-1\n" + "context\n" * 7 + "Decision: FIX\n") == {"HIGH-1": "FIX"}


def test_an_unknown_word_leaves_the_finding_undecided_and_keeps_the_word() -> None:
    found = extract("[HIGH-1] a\n")
    got = decisions(found, "### HIGH-1\n\n**Decision:** Partially accept\nFIX\n")
    d = got["HIGH-1"]
    assert d is not None
    assert (d.token, d.line, d.unparsed) == ("OPEN", 3, "Partially accept")
    assert not decided(d)
    assert d.describe(FINDINGS) == (
        "'Partially accept' after 'Decision:' (plan-findings-r1.md line 3) is not a decision word"
    )


def test_the_decision_records_its_line() -> None:
    found = extract("[LOW-1] a\n")
    assert decisions(found, "x\n### LOW-1\nDecision: FIX\n") == {"LOW-1": Decision("FIX", 3)}


def test_sanitize_collapses_whitespace_and_control_separators() -> None:
    assert sanitize("  a\tb\r\n c   d ") == "a b c d"


@pytest.mark.parametrize(
    ("text", "valid"),
    [
        ("[LOW-1] x", True),
        ("No findings.\n\n## Summary\nCritical: 0\nHigh: 0\nMedium: 0\nLow: 0\n", True),
        ("No findings.\nCritical: 0\nHigh: 0\n", False),
        ("", False),
        ("   \n", False),
        ("Looks fine to me.", False),
        (
            "The review was skipped: not a git repository. No findings. Critical: 0 High: 0 "
            "Medium: 0 Low: 0",
            False,
        ),
        ("[HIGH-1] findings extracted from the Codex analysis log", False),
    ],
)
def test_what_counts_as_a_review(text: str, valid: bool) -> None:
    assert (invalid_reason(text) is None) is valid


def test_a_reason_on_the_next_line_is_the_reason_as_docs_review_shows_it() -> None:
    from plan_build.review.findings import reason

    found = extract("[HIGH-1] a\n[LOW-1] b\n[MEDIUM-1] c\n")
    text = (
        "### HIGH-1\nDecision: FIX\nThe cursor is now validated in audit.py.\n\n"
        "### LOW-1\nDecision: REJECT\nChecked upstream:\nthe caller validates it.\n"
        "### MEDIUM-1\nDecision: REJECT - not ours\n"
    )
    got = decisions(found, text)
    assert {fid: reason(text, d) for fid, d in got.items() if d is not None} == {
        "HIGH-1": "The cursor is now validated in audit.py.",
        "LOW-1": "Checked upstream: the caller validates it.",
        "MEDIUM-1": "not ours",
    }
    bare = "### HIGH-1\nDecision: FIX\n\nunrelated prose\n"
    [d] = [d for d in decisions(found, bare).values() if d is not None]
    assert reason(bare, d) is None
