"""The Markdown report rendered as GitHub renders it (cmark-gfm, through `cmarkgfm`).

Every text that did not come from plan-build (a reviewer's finding, a decision's reason, a
file name, a task title, a check's output) stays text: no image, no link, no autolink, no raw
HTML reaches the rendered page from it, and each is shown as written (issue 36, ADR 0194).
Raw HTML is let through the parser (`UNSAFE`) as GitHub does before its own sanitiser, so a
`<img>` that slipped through would be seen here.
"""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser
from pathlib import Path

import cmarkgfm
from cmarkgfm.cmark import Options
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from plan_build.views import report as view
from plan_build.views import story as st
from tests.support import stories
from tests.support.paths import ROOT

TEMPLATES = ROOT / "templates"
# What the issue's reproduction planted: two remote images, a javascript: link, a file name.
IMAGE = "![p](http://host/x.png)"
JS_LINK = "[x](javascript:alert(1))"
NAME = "`![x](https:evil.example/p.png)`.txt"
HOSTILE = hs.sampled_from(
    [
        IMAGE,
        JS_LINK,
        NAME,
        "<img src=http://host/y.png>",
        "<http://host/auto>",
        "https://host/bare www.host.example/w ftp://host/f",
        "mail me@host.example or xmpp:me@host.example",
        "[ref]\n\n[ref]: http://host/ref",
        "``` ![x](http://host/in-fence.png) ```",
        "\\![esc](http://host/esc.png)",
        "| cell | ![c](http://host/c.png) |",
        "&#33;[e](http://host/entity.png)",
        "<details><summary>x</summary>",
    ]
)
TEXT = hs.lists(
    hs.sampled_from([*"ab `!*_[]()<>|\\:/@.&#~\n", "http://", "www.", "javascript:", "h.io"]),
    max_size=25,
).map("".join)
# The tags plan-build's own template makes; anything else came from a text.
OWN_TAGS = {
    "h2", "h3", "h4", "p", "em", "strong", "code", "pre", "table", "thead", "tbody", "tr", "th",
    "td", "details", "summary", "br",
}  # fmt: skip


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))


def github(md: str) -> str:
    return cmarkgfm.github_flavored_markdown_to_html(md, options=Options.CMARK_OPT_UNSAFE)


def tags(page: str) -> list[tuple[str, list[tuple[str, str | None]]]]:
    parser = _Tags()
    parser.feed(page)
    return parser.tags


def assert_inert(page: str) -> None:
    found = tags(page)
    assert {t for t, _ in found} <= OWN_TAGS, page
    links = [(t, a) for t, attrs in found for a, _ in attrs if a in ("href", "src")]
    assert not links, links  # the report links nothing, so any href/src came from a text
    assert "<img" not in page


def test_the_issues_three_images_and_the_javascript_link_stay_text() -> None:
    s = stories.story()
    first = s.rounds[0]
    finding = first.findings[1]
    hostile = st.FindingRow(
        finding.id, finding.severity, finding.reviewer, None, IMAGE, "REJECT", JS_LINK, "OPEN"
    )
    s = st.map_strings(s, lambda x: x)  # a copy
    s = type(s)(
        **{
            **s.__dict__,
            "rounds": (
                type(first)(**{**first.__dict__, "findings": (hostile,)}),
                *s.rounds[1:],
            ),
            "files": (st.FileRow(NAME, "A", 1, 0), *s.files),
        }
    )
    page = github(view.render(s, "md", TEMPLATES))
    assert_inert(page)
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    for written in (IMAGE, JS_LINK, NAME):
        assert written in text  # shown as written, not dropped


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hostile=HOSTILE, noise=TEXT)
def test_no_text_in_any_field_of_the_story_becomes_an_image_link_or_html(
    hostile: str, noise: str
) -> None:
    """Every string of a whole story (findings, reasons, file names, task titles, check
    output, the diff) carries hostile Markdown; the rendered report has none of it live."""
    s = st.map_strings(stories.story(), lambda x: f"{x} {hostile}{noise}")
    assert_inert(github(view.render(s, "md", TEMPLATES)))


def _cell(md: str) -> str:
    """The text of the one cell of a one-row table holding `md`, as GitHub shows it."""
    page = github(f"| h |\n|---|\n| {md} |\n")
    assert_inert(page)
    body = page.split("<tbody>")[1]
    cells = re.findall(r"<td>(.*?)</td>", body, re.DOTALL)
    assert len(cells) == 1, page  # a `|` in the text did not split the cell
    return html.unescape(re.sub(r"<[^>]+>", "", cells[0]))


@settings(max_examples=200, deadline=None)
@given(text=hs.one_of(HOSTILE, TEXT))
def test_a_text_in_a_cell_is_shown_exactly_as_written(text: str) -> None:
    shown = " ".join(text.split())
    assert _cell(view._md_cell(text)) == shown


@settings(max_examples=200, deadline=None)
@given(text=hs.one_of(HOSTILE, TEXT).filter(lambda t: t.strip()))
def test_a_file_name_in_a_code_span_is_shown_exactly_as_written(text: str) -> None:
    """A backslash does not escape inside a code span: the span's backtick run is longer than
    any in the name, so the name cannot close it."""
    shown = " ".join(text.split())
    page = github(f"| h |\n|---|\n| {view._md_code(text)} |\n")
    assert_inert(page)
    assert page.count("<code>") == 1
    assert _cell(view._md_code(text)) == shown


def test_a_fence_inside_a_check_output_does_not_close_the_report_block(tmp_path: Path) -> None:
    s = stories.story()
    assert s.verify is not None
    check = s.verify.checks[0]
    tail = "````\n" + IMAGE + "\n````"
    verify = st.VerifyStory(
        s.verify.at,
        s.verify.ok,
        s.verify.stale,
        (st.VerifyCheck(check.id, check.status, check.detail, check.seconds, tail),),
    )
    s = type(s)(**{**s.__dict__, "verify": verify})
    page = github(view.render(s, "md", TEMPLATES))
    assert_inert(page)
    assert html.escape(IMAGE, quote=False) in page


def test_a_diff_cut_to_fit_a_pull_request_closes_its_block_and_says_so_on_github() -> None:
    """Cut to GitHub's 65,536 characters, the diff still ends inside its own fenced block,
    and the note after it is text, not code (rendered with GitHub's parser)."""
    s = stories.story(diff_lines=60_000)
    planted = '+x = "![p](http://host/x.png)"\n'
    s = st.Story(**{**s.__dict__, "diff": planted + s.diff})
    md = view.render(view.redacted(s, {}, ()), "md", ROOT / "templates")
    assert len(md) <= view.MD_LIMIT
    page = github(md)
    assert_inert(page)
    code, after = page.split('<pre lang="diff"><code>', 1)[1].split("</code></pre>", 1)
    assert code.count("\n+") > 100  # what fits is shown, in the block
    assert "fits a pull request" not in code
    assert "so that this report fits a pull request's description" in html.unescape(after)
