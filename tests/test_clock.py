"""One clock, one format: every moment plan-build writes is RFC 3339 UTC, whole seconds, `Z`
(codex-review's format, which the review files share)."""

from __future__ import annotations

import datetime as dt
import io
import re
from pathlib import Path

import pytest

from plan_build.core import clock
from plan_build.core.ui import Console
from plan_build.release import actions, fetch
from plan_build.release.store import Store
from tests.support.releases import fake_bundle

RFC3339_Z = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def test_stamp_is_utc_whole_seconds_with_z_whatever_the_zone() -> None:
    moment = dt.datetime(2026, 3, 4, 7, 8, 9, 999_999, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert clock.stamp(moment) == "2026-03-04T05:08:09Z"
    assert RFC3339_Z.fullmatch(clock.stamp())
    assert clock.compact(moment) == "20260304T050809Z"


@pytest.mark.parametrize(
    "text", ["2026-03-04T05:08:09Z", "2026-03-04T05:08:09+00:00", "2026-03-04T07:08:09+02:00"]
)
def test_parse_reads_both_spellings_of_utc_and_offsets(text: str) -> None:
    assert clock.parse(text) == dt.datetime(2026, 3, 4, 5, 8, 9, tzinfo=dt.UTC)


@pytest.mark.parametrize("text", ["", "yesterday", "2026-03-04T05:08:09", "\x00"])
def test_parse_refuses_what_is_not_a_moment(text: str) -> None:
    assert clock.parse(text) is None


def test_release_history_and_listing_write_the_one_format(
    private_home: Path, tmp_path: Path
) -> None:
    root = private_home / ".local" / "share" / "plan-build"
    store = Store(root, Console(stream=io.StringIO()))
    fake_bundle(tmp_path / "a")
    actions.activate(store, fetch.Source("dir", str(tmp_path / "a"), path=tmp_path / "a"), None)
    (entry,) = store.history()
    assert RFC3339_Z.fullmatch(str(entry["at"]))
    (row,) = actions.listing(store)
    assert RFC3339_Z.fullmatch(row.installed)


def test_the_crash_log_heads_each_entry_with_the_one_format(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from plan_build.outcomes import write_crash_log

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    where = write_crash_log(RuntimeError("boom"))
    head = Path(where).read_text(encoding="utf-8").splitlines()[0]
    assert RFC3339_Z.fullmatch(head.split()[1]), head
