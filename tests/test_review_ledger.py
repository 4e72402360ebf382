"""decisions.tsv: codex-review's format, upserted so that every byte plan-build does not
own - comments, other rounds, unknown rows and columns, CRLF, the user's `selected` - stays."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.review.ledger import HEADER, Entry, Ledger, counts, ensure

T1 = dt.datetime(2026, 11, 30, 10, 0, 0, tzinfo=dt.UTC)
T2 = dt.datetime(2026, 11, 30, 11, 0, 0, tzinfo=dt.UTC)


def row(*fields: str) -> str:
    return "\t".join(fields) + "\n"


def entry(fid: str, decision: str = "OPEN", text: str = "text", reviewer: str = "codex") -> Entry:
    return Entry(reviewer, fid, fid.split("-", 1)[0], text, decision)


def test_a_missing_ledger_is_created_with_codex_reviews_header(tmp_path: Path) -> None:
    path = tmp_path / "decisions.tsv"
    assert ensure(path) is True
    assert path.read_text() == (
        "# Codex Review Decisions Ledger\n"
        "# Edit `selected` to `yes` for fixes you want applied.\n"
        "# phase\tartifact\tround\treviewer\tfinding_id\tseverity\tfinding\tdecision\toutcome"
        "\tselected\tstatus\tupdated_at\n"
    )
    assert oct(path.stat().st_mode & 0o777) == "0o644"
    assert ensure(path) is False


def test_new_findings_are_appended_with_the_mapping(tmp_path: Path) -> None:
    path = tmp_path / "decisions.tsv"
    ledger = Ledger.load(path)
    ledger.sync(
        "plan",
        1,
        [entry("HIGH-1", "ACCEPT", "a\tb"), entry("LOW-1", "DEFER"), entry("MEDIUM-1")],
        T1,
    )
    ledger.save()
    assert path.read_text() == HEADER + (
        row(
            "plan",
            "plan",
            "1",
            "codex",
            "HIGH-1",
            "HIGH",
            "a b",
            "ACCEPT",
            "FIX",
            "yes",
            "agreed-fix",
            "2026-11-30T10:00:00Z",
        )
        + row(
            "plan",
            "plan",
            "1",
            "codex",
            "LOW-1",
            "LOW",
            "text",
            "DEFER",
            "NO-CHANGE",
            "no",
            "agreed-nochange",
            "2026-11-30T10:00:00Z",
        )
        + row(
            "plan",
            "plan",
            "1",
            "codex",
            "MEDIUM-1",
            "MEDIUM",
            "text",
            "OPEN",
            "OPEN",
            "no",
            "proposed",
            "2026-11-30T10:00:00Z",
        )
    )


def test_a_sync_that_changes_nothing_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "decisions.tsv"
    ledger = Ledger.load(path)
    ledger.sync("plan", 1, [entry("HIGH-1", "FIX")], T1)
    ledger.save()
    before = path.read_bytes()
    again = Ledger.load(path)
    assert again.sync("plan", 1, [entry("HIGH-1", "FIX")], T2) is False
    assert again.changed is False
    assert path.read_bytes() == before  # codex-review restamps every row of the round


def test_everything_else_survives_byte_for_byte(tmp_path: Path) -> None:
    path = tmp_path / "decisions.tsv"
    other_round = row(
        "plan",
        "plan",
        "1",
        "codex",
        "HIGH-1",
        "HIGH",
        "old",
        "FIX",
        "FIX",
        "yes",
        "agreed-fix",
        "2026-01-01T00:00:00Z",
    )
    current = (
        "\t".join(
            [
                "implement",
                "implement",
                "2",
                "codex",
                "HIGH-1",
                "HIGH",
                "t",
                "OPEN",
                "OPEN",
                "no",
                "proposed",
                "2026-01-01T00:00:00Z",
                "my note",
            ]
        )
        + "\r\n"
    )
    foreign = row(
        "implement",
        "implement",
        "2",
        "human",
        "HIGH-9",
        "HIGH",
        "mine",
        "FIX",
        "FIX",
        "yes",
        "agreed-fix",
        "2026-01-01T00:00:00Z",
    )
    original = (
        HEADER.replace("updated_at\n", "updated_at\tnotes\n")
        + "# my own comment\n\n"
        + other_round
        + current
        + foreign
    )
    path.write_text(original)
    ledger = Ledger.load(path)
    assert ledger.sync("implement", 2, [entry("HIGH-1", "FIX")], T2)
    ledger.save()
    changed = (
        "\t".join(
            [
                "implement",
                "implement",
                "2",
                "codex",
                "HIGH-1",
                "HIGH",
                "text",
                "FIX",
                "FIX",
                "yes",
                "agreed-fix",
                "2026-11-30T11:00:00Z",
                "my note",
            ]
        )
        + "\r\n"
    )
    assert path.read_bytes().decode() == original.replace(current, changed)


def test_a_users_selected_survives_in_both_directions(tmp_path: Path) -> None:
    path = tmp_path / "decisions.tsv"
    ledger = Ledger.load(path)
    ledger.sync("implement", 1, [entry("HIGH-1", "FIX"), entry("LOW-1", "REJECT")], T1)
    ledger.save()
    text = path.read_text()
    # the user unselects a FIX and selects a REJECT
    text = text.replace("FIX\tyes", "FIX\tno").replace("NO-CHANGE\tno", "NO-CHANGE\tyes")
    path.write_text(text)
    ledger = Ledger.load(path)
    ledger.sync("implement", 1, [entry("HIGH-1", "FIX", "new text"), entry("LOW-1", "REJECT")], T2)
    rows = {r.get("finding_id"): r for r in ledger.rows("implement", 1)}
    assert rows["HIGH-1"].get("selected") == "no"  # codex-review resets this to yes
    assert rows["HIGH-1"].get("finding") == "new text"
    assert rows["LOW-1"].get("selected") == "yes"


def test_an_untouched_default_follows_the_new_decision(tmp_path: Path) -> None:
    path = tmp_path / "decisions.tsv"
    ledger = Ledger.load(path)
    ledger.sync("plan", 1, [entry("HIGH-1", "ACCEPT"), entry("LOW-1")], T1)
    ledger.sync("plan", 1, [entry("HIGH-1", "REJECT"), entry("LOW-1", "ACCEPT")], T2)
    rows = {r.get("finding_id"): r.get("selected") for r in ledger.rows("plan", 1)}
    assert rows == {"HIGH-1": "no", "LOW-1": "yes"}


def test_rows_of_another_round_are_never_touched(tmp_path: Path) -> None:
    path = tmp_path / "decisions.tsv"
    ledger = Ledger.load(path)
    ledger.sync("plan", 1, [entry("HIGH-1")], T1)
    ledger.sync("plan", 2, [entry("HIGH-1", "FIX")], T2)
    assert [r.get("decision") for r in ledger.rows("plan", 1)] == ["OPEN"]
    assert [r.get("decision") for r in ledger.rows("plan", 2)] == ["FIX"]
    assert ledger.rows("plan", 10) == []  # round 1 is not round 10's prefix


def test_a_file_without_a_final_newline_gets_one_before_new_rows(tmp_path: Path) -> None:
    path = tmp_path / "decisions.tsv"
    path.write_text(HEADER.rstrip("\n"))
    ledger = Ledger.load(path)
    ledger.sync("plan", 1, [entry("LOW-1")], T1)
    ledger.save()
    assert path.read_text().splitlines()[2:] == [
        HEADER.splitlines()[2],
        "plan\tplan\t1\tcodex\tLOW-1\tLOW\ttext\tOPEN\tOPEN\tno\tproposed\t2026-11-30T10:00:00Z",
    ]


def test_wrong_columns_are_an_error_and_nothing_is_written(tmp_path: Path) -> None:
    path = tmp_path / "decisions.tsv"
    bad = HEADER.replace("finding\tdecision", "decision\tfinding")
    path.write_text(bad)
    with pytest.raises(PlanBuildError) as err:
        Ledger.load(path)
    assert err.value.code == ExitCode.USAGE
    assert f"{path}:3: the ledger's columns are not codex-review's" in str(err.value)
    assert path.read_text() == bad


def test_a_row_whose_tabs_became_spaces_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "decisions.tsv"
    broken = "plan plan 1 codex HIGH-1 HIGH text OPEN OPEN no proposed x\n"
    path.write_text(HEADER + "plan\tplan\t1\tcodex HIGH-1 HIGH text OPEN OPEN no proposed x\n")
    with pytest.raises(PlanBuildError, match=r":4: this row has 4 TAB-separated fields, not 12"):
        Ledger.load(path).sync("plan", 1, [entry("HIGH-1")], T1)
    assert broken not in path.read_text()


def test_a_mangled_selected_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "decisions.tsv"
    path.write_text(
        HEADER
        + row(
            "plan",
            "plan",
            "1",
            "codex",
            "HIGH-1",
            "HIGH",
            "t",
            "FIX",
            "FIX",
            "Y",
            "agreed-fix",
            "x",
        )
    )
    with pytest.raises(PlanBuildError, match="selected is 'Y' for HIGH-1"):
        Ledger.load(path).rows("plan", 1)


def test_counts_per_severity(tmp_path: Path) -> None:
    ledger = Ledger.load(tmp_path / "decisions.tsv")
    ledger.sync(
        "implement",
        1,
        [entry("HIGH-1", "FIX"), entry("HIGH-2", "WONTFIX"), entry("HIGH-3"), entry("LOW-1")],
        T1,
    )
    c = counts(ledger.rows("implement", 1))
    assert c["HIGH"].as_json() == {"total": 3, "fix": 1, "no_change": 1, "open": 1}
    assert c["LOW"].as_json() == {"total": 1, "fix": 0, "no_change": 0, "open": 1}
    assert c["CRITICAL"].total == 0


def test_invalid_utf8_in_other_rows_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "decisions.tsv"
    raw = (
        HEADER.encode()
        + b"plan\tplan\t9\tcodex\tLOW-1\tLOW\t\xff\xfe bytes\tOPEN\tOPEN\tno\tp\tx\n"
    )
    path.write_bytes(raw)
    ledger = Ledger.load(path)
    ledger.sync("plan", 1, [entry("LOW-2")], T1)
    ledger.save()
    assert path.read_bytes().startswith(raw)


def test_a_large_ledger_is_held_once_while_its_round_is_read_and_synced(tmp_path: Path) -> None:
    """review.summary at 1M rows must peak under 1.5x the file (issue 15): the ledger's bytes
    are kept, not bytes plus a decoded copy; a sync that changes nothing copies nothing."""
    import tracemalloc

    path = tmp_path / "decisions.tsv"
    body = "".join(
        row(
            "plan",
            "plan",
            str(r),
            "codex",
            f"HIGH-{i}",
            "HIGH",
            "naïve text",
            "FIX",
            "FIX",
            "yes",
            "agreed-fix",
            "2026-11-30T11:00:00Z",
        )
        for r in range(1, 2001)
        for i in range(1, 21)
    )
    path.write_text(HEADER + body)
    size = path.stat().st_size
    entries = [entry(f"HIGH-{i}", "FIX", "naïve text") for i in range(1, 21)]
    tracemalloc.start()
    try:
        ledger = Ledger.load(path)
        assert len(ledger.rows("plan", 2000)) == 20
        assert not ledger.sync("plan", 2000, entries, T1)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1.5 * size, (peak, size)
    assert ledger.data() == path.read_bytes()
