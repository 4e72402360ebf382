"""`plan-build report`: the session as one self-contained page, or as Markdown.

Goldens of a hand-built story (every kind of event) for both formats; hostile reviewer text
shown as text; a planted token and the home directory never reach the page; the diff's size
bound; an unknown session id; a session with only its baseline, read from real records.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from plan_build.core import gitrepo
from plan_build.core.errors import ExitCode, PlanBuildError
from plan_build.delivery import baseline
from plan_build.views import report as view
from plan_build.views import story as st
from plan_build.views import storyread
from tests.support import stories
from tests.support.gitcmd import git
from tests.support.paths import ROOT
from tests.support.runcli import run_cli

GOLDEN = Path(__file__).parent / "golden" / "report"
TEMPLATES = ROOT / "templates"
TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def _golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert text == path.read_text(), f"{name} differs (UPDATE_GOLDEN=1 regenerates it)"


@pytest.mark.parametrize("fmt", ["html", "md"])
def test_both_formats_match_their_golden_files(fmt: str) -> None:
    text = view.render(view.redacted(stories.story(), {}, ()), fmt, TEMPLATES)
    _golden(f"report.{fmt}", text)


def test_the_html_page_references_nothing_outside_itself() -> None:
    page = view.render(stories.story(), "html", TEMPLATES)
    assert not re.search(r"<(script|link|iframe|object|embed)\b", page, re.IGNORECASE)
    assert not re.search(r"<[^>]*\b(src|href)\s*=", page)  # no tag's attribute loads anything
    assert "url(" not in page
    assert "@import" not in page
    assert "default-src 'none'" in page  # and the page forbids it besides


def test_hostile_finding_text_is_shown_as_text_in_html_and_markdown() -> None:
    s = stories.story()
    page = view.render(s, "html", TEMPLATES)
    assert "<script>document.title" not in page
    assert "<img src=x" not in page
    assert "&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    md = view.render(s, "md", TEMPLATES)
    assert not re.search(r"(?<!\\)<(script|img)", md)  # every `<` of the text escaped
    assert "\\<script\\>document.title='pwned'\\</script\\>" in md  # GitHub shows it as text


def test_one_timeline_mark_per_event_with_durations() -> None:
    s = stories.story()
    page = view.render(s, "html", TEMPLATES)
    assert page.count('<g class="event"') == len(s.events)
    assert '<rect class="mark k-review"' in page  # a review's minute drawn as a bar
    assert "1.0 min 0 s" not in page
    assert "1 min 0 s" in page


def test_a_planted_token_and_the_home_directory_never_reach_either_format(
    private_home: Path,
) -> None:
    s = stories.story()
    leaky = st.FindingRow(
        "HIGH-9",
        "HIGH",
        "codex",
        None,
        f"token {TOKEN} in {private_home}/proj/x.py",
        None,
        None,
        "OPEN",
    )
    r0 = s.rounds[0]
    s = st.Story(
        **{**s.__dict__, "rounds": (st.RoundStory(**{**r0.__dict__, "findings": (leaky,)}),)}
    )
    clean = view.redacted(s, {"DEMO_API_TOKEN": "s3cr3t-value-123"}, [(str(private_home), "~")])
    for fmt in ("html", "md"):
        text = view.render(clean, fmt, TEMPLATES)
        assert TOKEN not in text
        assert str(private_home) not in text
        assert "withheld by plan-build" in text


def test_an_environment_secret_is_withheld_too() -> None:
    s = stories.story()
    s = st.Story(**{**s.__dict__, "diff": "+password = s3cr3t-value-123\n"})
    text = view.render(
        view.redacted(s, {"DEMO_API_TOKEN": "s3cr3t-value-123"}, ()), "md", TEMPLATES
    )
    assert "s3cr3t-value-123" not in text
    assert "$DEMO_API_TOKEN" in text


def test_a_large_diff_is_cut_at_a_line_and_says_what_was_left_out() -> None:
    s = stories.story(diff_lines=60_000)
    page = view.render(s, "html", TEMPLATES)
    shown, note = view.bounded_diff(s.diff)
    assert note is not None
    assert len(shown) <= view.MAX_DIFF
    assert shown.endswith("\n")
    left = s.diff.count("\n") - shown.count("\n")
    assert f"{left} more line(s)" in page
    assert len(page) < view.MAX_DIFF + 60_000
    small = view.render(stories.story(), "html", TEMPLATES)
    assert 'id="left-out"' not in small


def test_an_unknown_session_is_exit_2_naming_the_list_command(repo: Path) -> None:
    r = gitrepo.discover(repo)
    baseline.capture(r, session_id="s1")
    with pytest.raises(PlanBuildError) as err:
        storyread.gather(r, {}, repo, "nope")
    assert err.value.code == ExitCode.USAGE
    assert "plan-build report --list" in (err.value.fix or "")


def test_a_baseline_only_session_gives_a_page_that_says_so(repo: Path, private_home: Path) -> None:
    r = gitrepo.discover(repo)
    baseline.capture(r, session_id="s1", mode="standard")
    out = view.make(
        r, {}, repo, home=private_home, templates=TEMPLATES, session_id=None, fmt="html", out=None
    )
    assert out == r.state_dir / "sessions" / "s1" / "report.html"
    page = out.read_text()
    assert 'id="empty"' in page
    assert "Nothing has happened in this session yet" in page
    assert page.count('<g class="event"') == 1  # the baseline
    assert str(repo) not in page
    assert str(private_home) not in page


def test_a_dispatch_tagged_with_another_session_is_not_in_this_ones_report(repo: Path) -> None:
    """Two sessions at the same time (two worktrees share the log): each report has its own
    dispatches and the untagged ones of its time, never the other session's."""
    from plan_build.core import clock
    from plan_build.dispatch import telemetry
    from plan_build.views import storydispatch

    r = gitrepo.discover(repo)
    baseline.capture(r, session_id="s1")
    baseline.capture(r, session_id="s2")
    start = clock.stamp()
    for dispatch, task, session in (("d1", "TASK-001", "s1"), ("d2", "TASK-002", "s2")):
        for kind in ("attempt", "dispatch"):
            record = {"kind": kind, "at": start, "dispatch": dispatch, "task": task}
            telemetry.append(r.state_dir, {**record, "session": session})
    telemetry.append(
        r.state_dir, {"kind": "dispatch", "at": start, "dispatch": "d3", "task": "TASK-003"}
    )
    since = "2000-01-01T00:00:00Z"
    for sid, expected in (("s1", ["d1", "d3"]), ("s2", ["d2", "d3"])):
        tasks, *_ = storydispatch.dispatches(r, sid, since, None)
        assert [t.dispatch for t in tasks] == expected


def test_the_command_writes_the_page_and_prints_its_path(repo: Path) -> None:
    baseline.capture(gitrepo.discover(repo), session_id="s1")
    (repo / "new.txt").write_text("hello\n")
    got = run_cli("report", "--format", "md", cwd=repo)
    assert got.code == 0, got.stderr
    path = Path(got.stdout.strip())
    assert path.name == "report.md"
    assert "`new.txt`" in path.read_text()
    listed = run_cli("report", "--list", cwd=repo)
    assert listed.stdout.startswith("s1  started ")
    bad = run_cli("report", "--session", "nope", cwd=repo)
    assert bad.code == 2
    assert "plan-build report --list" in bad.stderr
    assert run_cli("report", "--format", "pdf", cwd=repo).code == 2


def test_a_committed_session_reports_its_commit(repo: Path, private_home: Path) -> None:
    r = gitrepo.discover(repo)
    baseline.capture(r, session_id="s1")
    (repo / "new.txt").write_text("hello\n")
    git(repo, "add", "new.txt")
    git(repo, "commit", "-qm", "the change")
    base = baseline.load(r, "s1")
    baseline.mark_committed(r, base, r.head() or "")
    story = storyread.gather(r, {}, repo, "s1")
    assert story.outcome.startswith("committed as ")
    assert [f.path for f in story.files] == ["new.txt"]
    assert [e.kind for e in story.events] == ["baseline", "commit"]


def test_a_verify_command_shows_the_tail_of_its_log(repo: Path) -> None:
    r = gitrepo.discover(repo)
    baseline.capture(r, session_id="s1")
    logs = r.state_dir / "sessions" / "s1" / "logs"
    logs.mkdir(parents=True)
    (logs / "unit_tests.log").write_text("".join(f"line {i}\n" for i in range(40)))
    tail = storyread._tail(r, "s1", "command.unit tests")
    assert tail.splitlines() == [f"line {i}" for i in range(25, 40)]
    assert storyread._tail(r, "s1", "secrets") == ""


def test_a_report_written_into_the_work_tree_is_refused_so_it_is_never_committed(
    repo: Path,
) -> None:
    baseline.capture(gitrepo.discover(repo), session_id="s1")
    (repo / "new.txt").write_text("hello\n")
    got = run_cli("report", "--format", "md", "--out", "pr.md", cwd=repo)
    assert got.code == 2
    assert "--out pr.md is inside the work tree" in got.stderr
    assert "--out ../report.md" in got.stderr
    assert not (repo / "pr.md").exists()
    outside = run_cli("report", "--format", "md", "--out", "../pr.md", cwd=repo)
    assert outside.code == 0, outside.stderr
    assert (repo.parent / "pr.md").is_file()
    status = run_cli("status", "--json", cwd=repo)
    assert "pr.md" not in status.stdout  # the change is still new.txt alone


def _rows(html_part: str) -> list[str]:
    return re.findall(r"<tr><td>([^<]*)</td><td>[AMDR]", html_part)


@pytest.mark.parametrize("fmt", ["html", "md"])
def test_the_reviews_come_before_the_changed_files(fmt: str) -> None:
    text = view.render(stories.big_change(5), fmt, TEMPLATES)
    reviews = text.index('<section id="reviews">' if fmt == "html" else "### Reviews")
    change = text.index('<section id="change">' if fmt == "html" else "### Committed change")
    first_finding = text.index("the handler ignores an error")
    assert reviews < first_finding < change


def test_a_big_change_shows_the_first_rows_and_folds_the_rest_into_details() -> None:
    count = view.MAX_FILE_ROWS + 321
    s = stories.big_change(count)
    page = view.render(s, "html", TEMPLATES)
    before, folded = page.split('<details id="more-files">', 1)
    folded = folded.split("</details>", 1)[0]
    shown = _rows(before)
    assert shown == [f.path for f in s.files[: view.MAX_FILE_ROWS]]
    assert _rows(folded) == [f.path for f in s.files[view.MAX_FILE_ROWS :]]
    assert "<summary>321 more file(s)</summary>" in folded
    assert f"{count} file(s)" in before  # the total is still said above the table
    assert not re.search(r"<script\b", page)  # folding needs no script (the CSP forbids one)


def test_a_change_of_exactly_the_limit_folds_nothing() -> None:
    s = stories.big_change(view.MAX_FILE_ROWS)
    page = view.render(s, "html", TEMPLATES)
    assert 'id="more-files"' not in page
    assert len(_rows(page)) == view.MAX_FILE_ROWS
    md = view.render(s, "md", TEMPLATES)
    assert "not listed" not in md


def test_a_big_change_in_markdown_lists_the_first_rows_and_counts_the_rest() -> None:
    count = view.MAX_FILE_ROWS + 4_800
    s = stories.big_change(count)
    md = view.render(s, "md", TEMPLATES)
    listed = re.findall(r"^\| `(src/pkg[^`]*)` \|", md, re.MULTILINE)
    assert listed == [f.path for f in s.files[: view.MAX_FILE_ROWS]]
    assert "4800 more file(s) not listed (see `plan-build status` / `git status`)." in md
    assert s.files[-1].path not in md.split("<details>", 1)[0]
    page = view.render(s, "html", TEMPLATES)
    assert s.files[-1].path in page  # the page keeps every row, folded


def test_a_long_file_name_cell_wraps_instead_of_widening_the_table() -> None:
    page = view.render(stories.big_change(3, long_name=True), "html", TEMPLATES)
    assert re.search(r"table\.files \{[^}]*table-layout: fixed", page)
    assert re.search(r"table\.files td:first-child, td\.where \{[^}]*overflow-wrap: anywhere", page)
    assert "<tr><td>src/" + "n" * 252 + ".py</td>" in page
    assert '<td class="where">src/' + "n" * 252 + ".py:12</td>" in page  # a finding's place


def test_redaction_scans_only_the_part_of_a_large_diff_the_report_shows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from plan_build.core import redact

    s = stories.story(diff_lines=60_000)
    planted = f'+aws = "AKIA{"QWERTYUIOPASDFGH"}"\n'
    s = st.Story(**{**s.__dict__, "diff": planted + s.diff + planted})
    scanned: list[int] = []
    real = redact.clean_many

    def counting(texts, env, paths=()):  # type: ignore[no-untyped-def]
        scanned.append(sum(len(t) for t in texts))
        return real(texts, env, paths)

    monkeypatch.setattr(redact, "clean_many", counting)
    page = view.render(view.redacted(s, {}, ()), "html", TEMPLATES)
    assert scanned
    assert scanned[0] < view.MAX_DIFF + 20_000  # the cut diff, not all 60,000 lines
    assert "AKIA" + "QWERTYUIOPASDFGH" not in page  # the shown one withheld, the cut one not shown
    left = s.diff.count("\n") - view.bounded_diff(s.diff)[0].count("\n")
    assert f"{left} more line(s)" in page  # the note still counts what was cut


def test_the_report_reads_a_huge_diff_only_as_far_as_it_shows_it(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """git is stopped once the report has what it shows (issue 36: reading a 5,000-file
    change's whole diff took longer than making the rest of the report); the page says how
    many of the change's files the diff shown leaves out."""
    monkeypatch.setattr(st, "MAX_DIFF", 3_000)
    r = gitrepo.discover(repo)
    baseline.capture(r, session_id="s1")
    for i in range(40):
        (repo / f"f{i:02d}.txt").write_text("line\n" * 30)
    s = storyread.gather(r, {}, repo, "s1")
    assert not s.diff_whole
    assert len(s.diff.encode()) == 3_000
    page = view.render(view.redacted(s, {}, ()), "html", TEMPLATES)
    diff = page.split('<details id="diff">', 1)[1].split("</pre>", 1)[0]
    shown = diff.count("diff --git ")
    assert 0 < shown < 40
    assert f"{40 - shown} more file(s) of 40 are not in it; see it with git diff" in page
    small = storyread.gather(r, {}, repo, "s1")
    monkeypatch.setattr(st, "MAX_DIFF", 1_000_000)
    whole = storyread.gather(r, {}, repo, "s1")
    assert whole.diff_whole
    assert whole.diff.startswith(small.diff[: small.diff.rfind("\n")])


def test_the_markdown_report_fits_a_pull_request_description() -> None:
    """GitHub takes 65,536 characters in a pull request's description: a big diff is cut to
    what the rest of the Markdown leaves, and the cut is said."""
    s = stories.story(diff_lines=60_000)
    md = view.render(view.redacted(s, {}, ()), "md", TEMPLATES)
    assert len(md) <= view.MD_LIMIT
    assert "so that this report fits a pull request's description" in md
    assert "(the HTML report shows more of it)" in md
    assert md.count("+line ") > 100  # what fits is still shown
    page = view.render(view.redacted(s, {}, ()), "html", TEMPLATES)
    assert len(page) > view.MD_LIMIT  # the page keeps the 200,000 characters
    small = view.render(view.redacted(stories.story(), {}, ()), "md", TEMPLATES)
    assert "fits a pull request" not in small
