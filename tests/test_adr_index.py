"""The ADR index names every record, in one shape, and every "by NNNN" names a later record."""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.paths import ROOT

ADR = ROOT / "docs" / "adr"
ROW = re.compile(r"^\| \[(\d{4})\]\((\d{4}-[a-z0-9-]+\.md)\) \| (.+) \| (.+) \|$")
STATUS = re.compile(
    r"^(accepted|superseded by (\d{4})|accepted; (?:amended|partly superseded) by (\d{4}))$"
)
HEADINGS = ["## Context", "## Decision", "## Consequences"]


def records() -> list[Path]:
    return sorted(ADR.glob("[0-9][0-9][0-9][0-9]-*.md"))


def index() -> list[tuple[str, str, str, str]]:
    rows = []
    for line in (ADR / "README.md").read_text().splitlines():
        if line.startswith("| ["):
            m = ROW.match(line)
            assert m, f"an index row out of shape: {line}"
            rows.append((m.group(1), m.group(2), m.group(3), m.group(4)))
    return rows


def test_the_index_lists_every_record_once_in_order() -> None:
    listed = [file for _, file, _, _ in index()]
    assert listed == [p.name for p in records()]
    assert all(file.startswith(num) for num, file, _, _ in index())
    numbers = [p.name[:4] for p in records()]
    assert len(set(numbers)) == len(numbers), "two records share a number"


def test_every_record_has_the_one_shape_and_the_index_says_its_title_and_status() -> None:
    rows = {file: (num, title, status) for num, file, title, status in index()}
    for path in records():
        lines = path.read_text().split("\n")
        num, title, status = rows[path.name]
        assert lines[0] == f"# {num} {title}", path.name
        assert lines[1] == "", path.name
        assert lines[2] == f"Status: {status}", path.name
        assert STATUS.match(status), f"{path.name}: {status!r}"
        rest = lines[4:] if lines[3].startswith("Date: ") else lines[3:]
        if lines[3].startswith("Date: "):
            assert re.fullmatch(r"Date: \d{4}-\d{2}-\d{2}", lines[3]), path.name
        assert rest[:2] == ["", "## Context"], path.name
        assert [line for line in lines if line.startswith("## ")] == HEADINGS, path.name


def test_every_amended_or_superseded_record_names_a_later_one_that_exists() -> None:
    numbers = {num for num, _, _, _ in index()}
    later = 0
    for num, file, _, status in index():
        m = STATUS.match(status)
        assert m is not None
        by = m.group(2) or m.group(3)
        if by is None:
            continue
        later += 1
        assert by in numbers, f"{file}: {status} names no record"
        assert by > num, f"{file}: {status} names an earlier record"
        text = (ADR / next(f for n, f, _, _ in index() if n == by)).read_text()
        assert num in text, f"record {by} does not say which record it changes ({num})"
    assert later >= 5  # the known ones: 0040, 0052, 0062, 0110, 0150


def test_the_architecture_page_points_at_the_index() -> None:
    assert "docs/adr/README.md" in (ROOT / "docs" / "ARCHITECTURE.md").read_text()
