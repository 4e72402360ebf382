"""`plan-build report`: a session's story as one self-contained HTML page, or as Markdown.

Every text in the story goes through redaction first (one scan of them all), the repository
shown as `.` and the home as `~`. The HTML template autoescapes (reviewer and agent texts are
untrusted) and references nothing outside the page: inline CSS, an inline SVG timeline. The
diff is bounded: past MAX_DIFF characters it stops at a line and says how much was left out.
The reviews come before the changed files, and the files table shows MAX_FILE_ROWS rows: the
rest fold into a `<details>` (HTML) or are counted, not listed (Markdown; issue 36, ADR 0199).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from plan_build.core import codexusage
from plan_build.views import story as st
from plan_build.views.session import guard_text

if TYPE_CHECKING:
    from plan_build.core.gitrepo import Repo

FORMATS = ("html", "md")
MAX_DIFF = st.MAX_DIFF  # of the diff shown; the rest is counted, not shown
# rows of the changed-files table shown before the rest fold away (HTML: into a <details>;
# Markdown: counted, not listed, so a big change's report stays a readable PR body)
MAX_FILE_ROWS = 200
MD_LIMIT = 65_536  # characters GitHub takes in a pull request's description
MD_MARGIN = 1_000  # for the note that says where the diff was cut
KIND_LANE = {
    "baseline": 0,
    "review": 1,
    "decisions": 2,
    "dispatch": 3,
    "correction": 3,
    "verify": 4,
    "commit": 4,
}
LANES = ("session", "reviews", "decisions", "dispatch", "verify · commit")
WIDTH, LEFT, RIGHT, LANE_H, TOP = 960, 130, 20, 28, 24


def redacted(story: st.Story, env: Mapping[str, str], paths: Sequence[tuple[str, str]]) -> st.Story:
    """The story with every string redacted and machine paths replaced, in one scan. The diff
    is cut to what the report shows first: the rest is counted, never shown, and scanning a
    5,000-file change's whole diff was half the report's time (issue 36)."""
    import dataclasses

    from plan_build.core import redact

    shown, left_out = bounded_diff(story.diff, whole=story.diff_whole, files=len(story.files))
    if left_out is not None:
        story = dataclasses.replace(story, diff=shown, diff_left_out=left_out)
    texts = st.strings(story)
    clean = iter(redact.clean_many(texts, env, paths))
    return st.map_strings(story, lambda _s: next(clean))


def bounded_diff(
    diff: str, limit: int = MAX_DIFF, *, whole: bool = True, files: int = 0
) -> tuple[str, str | None]:
    """(the diff shown, what was left out in words, or None when nothing was). `whole=False`:
    `diff` is only the start of the change's diff, which has `files` files in all."""
    if whole and len(diff) <= limit:
        return diff, None
    end = min(limit, len(diff))
    cut = diff.rfind("\n", 0, end) + 1 or end
    shown, rest = diff[:cut], diff[cut:]
    if not whole:
        seen = _files_in(shown)
        more = f": {files - seen} more file(s) of {files} are not in it" if files > seen else ""
        return shown, f"the rest of the diff is left out{more}; see it with git diff"
    lines = rest.count("\n") + (0 if rest.endswith("\n") else 1)
    n = _files_in(rest)
    more = f", {n} more file(s) among them" if n else ""
    return shown, (
        f"{lines} more line(s) ({len(rest):,} characters) of the diff are left out{more}: "
        "see them with git diff"
    )


def _seconds(value: float | None) -> str:
    if value is None:
        return ""
    if value < 60:
        return f"{value:.1f} s"
    return f"{int(value // 60)} min {int(value % 60)} s"


def timeline(events: Sequence[st.Event]) -> dict[str, Any]:
    """The SVG timeline's geometry: one mark per event, x by time, a lane per kind."""
    from plan_build.core import clock

    moments = [clock.parse(e.at) for e in events]
    known = [m for m in moments if m is not None]
    t0 = min(known) if known else None
    span = max(((max(known) - t0).total_seconds() if t0 else 0.0), 1.0)
    usable = WIDTH - LEFT - RIGHT
    marks = []
    for i, (e, m) in enumerate(zip(events, moments, strict=True)):
        offset = (m - t0).total_seconds() if m is not None and t0 is not None else 0.0
        x = (
            LEFT + usable * offset / span
            if m is not None
            else LEFT + usable * i / max(len(events), 1)
        )
        width = usable * (e.seconds or 0.0) / span
        lane = KIND_LANE.get(e.kind, 4)
        marks.append(
            {
                "x": round(x, 1),
                "y": TOP + lane * LANE_H,
                "w": round(min(width, WIDTH - RIGHT - x), 1),
                "kind": e.kind,
                "title": f"{e.label} · {e.at}" + (f" · {_seconds(e.seconds)}" if e.seconds else ""),
            }
        )
    return {
        "width": WIDTH,
        "height": TOP + len(LANES) * LANE_H + 10,
        "left": LEFT,
        "lanes": [{"name": n, "y": TOP + i * LANE_H} for i, n in enumerate(LANES)],
        "marks": marks,
        "span": _seconds(span if known else None) or "unknown",
    }


def _tokens(value: codexusage.Usage | codexusage.Summed | None) -> str:
    """A run's or several runs' token use as Codex reported it; "unknown" where it did not."""
    if isinstance(value, codexusage.Summed):
        return codexusage.words_sum(value)
    if isinstance(value, codexusage.Usage):
        return codexusage.words(value)
    return st.UNKNOWN


def render(story: st.Story, fmt: str, templates: Path) -> str:
    """The page (`html`) or the Markdown (`md`) of an already redacted story."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates)),
        undefined=jinja2.StrictUndefined,
        autoescape=fmt == "html",  # noqa: S701 - Markdown escapes its cells itself (md)
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["seconds"] = _seconds
    env.filters["tokens"] = _tokens
    env.filters["md"] = _md_cell
    env.globals["guard"] = guard_text
    env.filters["code"] = _md_code
    # a redacted story's diff is already cut (a withheld line's note may make it a little longer)
    diff, left_out = (
        (story.diff, story.diff_left_out)
        if story.diff_left_out is not None
        else bounded_diff(story.diff)
    )
    template = env.get_template(f"report/report.{fmt}.j2")
    context = _context(story, diff, left_out)
    if fmt != "md":
        return template.render(**context)
    # Markdown is for a pull request's description, which GitHub caps at MD_LIMIT characters:
    # the diff gets what the rest leaves (it is the one part `git diff` gives back whole)
    room = MD_LIMIT - MD_MARGIN - len(template.render(**_context(story, "", None)))
    if len(diff) > room:
        shown, _ = bounded_diff(diff, max(room, 0))
        total = _files_in(diff) if story.diff_whole else len(story.files)
        left_out = (
            f"the diff is cut here so that this report fits a pull request's description "
            f"(GitHub takes {MD_LIMIT:,} characters): {total - _files_in(shown)} "
            "more file(s) of it are not shown here; see the whole diff with git diff"
        )
        if story.diff_left_out is not None or not story.diff_whole:
            left_out += " (the HTML report shows more of it)"
        context = _context(story, shown, left_out)
    return template.render(**context)


def _files_in(diff: str) -> int:
    return diff.count("\ndiff --git ") + (1 if diff.startswith("diff --git ") else 0)


def _context(story: st.Story, diff: str, left_out: str | None) -> dict[str, Any]:
    return {
        "s": story,
        "h": story.header,
        "diff": diff,
        "left_out": left_out,
        "files_shown": story.files[:MAX_FILE_ROWS],
        "files_folded": story.files[MAX_FILE_ROWS:],
        "fold_at": MAX_FILE_ROWS,
        "timeline": timeline(story.events),
        "added": sum(f.added or 0 for f in story.files),
        "removed": sum(f.removed or 0 for f in story.files),
        # one fence for every block (the diff, each check's output): longer than any run in them
        "fence": "`" * max(3, 1 + max(_longest_backticks(t) for t in [diff, *_tails(story)])),
    }


def _tails(story: st.Story) -> list[str]:
    return [c.tail for c in story.verify.checks if c.tail] if story.verify else []


def _longest_backticks(text: str) -> int:
    return max((len(m) for m in re.findall(r"`+", text)), default=0)


# Markdown the text of a reviewer, an agent, a task file or a file name must not become: every
# character that opens a link, an image, raw HTML, emphasis or a code span is backslash-escaped
# (GitHub shows the character itself), `:/` and `www.` so no URL is autolinked, and a word with
# `@` (an e-mail or XMPP autolink survives escapes) goes into a code span of its own.
_MD_ESCAPED = frozenset("\\`*_[]<>|~&!#")
_AUTOLINK = re.compile(r"(?i)(www)\.|:(?=/)")


def _md_word(word: str) -> str:
    if "@" in word:
        return _md_code(word)
    escaped = "".join("\\" + ch if ch in _MD_ESCAPED else ch for ch in word)
    return _AUTOLINK.sub(lambda m: f"{m.group(1) or ''}\\{m.group(0)[-1]}", escaped)


def _md_cell(text: object) -> str:
    """Untrusted text as inert Markdown for a table cell, a heading or a line: one line, shown
    as written, never a link, an image, an autolink, HTML or a table cell break (ADR 0194)."""
    value = "" if text is None else str(text)
    return " ".join(_md_word(w) for w in value.split())


def _md_code(text: object) -> str:
    """Untrusted text as one inline code span: delimited by a backtick run longer than any in
    it (a backslash does not escape inside a code span), `|` escaped for a table (GFM)."""
    value = " ".join(("" if text is None else str(text)).split())
    if not value:
        return ""
    fence = "`" * (_longest_backticks(value) + 1)
    pad = " " if value.startswith("`") or value.endswith("`") else ""
    return f"{fence}{pad}{value.replace('|', chr(92) + '|')}{pad}{fence}"


def _outside_the_change(repo: Repo, out: Path, fmt: str) -> None:
    """Refuse a report path in the work tree: it would become part of the intended change and
    be committed with it (issue 36; ADR 0195). The git dir is outside the change."""
    from plan_build.core.errors import ExitCode, PlanBuildError

    where = out.absolute().parent.resolve() / out.name
    for kept in (repo.git_dir, repo.common_dir):
        if where.is_relative_to(kept.resolve()):
            return
    if where.is_relative_to(repo.root.resolve()):
        raise PlanBuildError(
            f"--out {out} is inside the work tree: the report would become part of the "
            "intended change and be committed with it",
            f"omit --out (the report is written under the git dir and its path printed), or "
            f"name a path outside the repository, e.g. --out ../report.{fmt}",
            code=ExitCode.USAGE,
        )


def make(
    repo: Repo,
    env: Mapping[str, str],
    cwd: Path,
    *,
    home: Path,
    templates: Path,
    session_id: str | None,
    fmt: str,
    out: Path | None,
) -> Path:
    """Gather, redact, render and write the report; the path written."""
    from plan_build.core import fsutil
    from plan_build.views import storyread

    story = storyread.gather(repo, env, cwd, session_id)
    paths = sorted({(str(repo.root), "."), (str(home), "~")}, key=lambda p: len(p[0]), reverse=True)
    text = render(redacted(story, env, paths), fmt, templates)
    if out is None:
        out = repo.in_state(repo.state_dir / "sessions" / story.header.id / f"report.{fmt}")
    else:
        if out.is_dir():
            out = out / f"report.{fmt}"
        _outside_the_change(repo, out, fmt)
    fsutil.atomic_write(out, text)
    return out


__all__ = [
    "FORMATS",
    "MAX_DIFF",
    "MAX_FILE_ROWS",
    "bounded_diff",
    "make",
    "redacted",
    "render",
    "timeline",
]
