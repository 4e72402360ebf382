"""The HTML report in a real browser: headless Chromium (Debian's `chromium`) driven by
playwright. Opt in with `-m browser` (`nox -s browser` installs what it needs).

It opens the page from a file, as a person would, and checks what only a browser can: no
console error, not one network request but the page itself (file: sub-resources counted
too), one timeline mark per event, the planted `<script>` finding visible as text with no
script run, and a screenshot that is not blank. The screenshot is the manual's picture
(docs/images/report.png).
"""

from __future__ import annotations

import base64
import shutil
from pathlib import Path

import pytest

from plan_build.views import report as view
from tests.support import stories
from tests.support.paths import ROOT

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOT = ROOT / "docs" / "images" / "report.png"
VARIANCE = """async (src) => {
  const img = new Image();
  img.src = src;
  await img.decode();
  const c = document.createElement('canvas');
  c.width = img.width; c.height = img.height;
  const g = c.getContext('2d');
  g.drawImage(img, 0, 0);
  const d = g.getImageData(0, 0, c.width, c.height).data;
  let n = 0, sum = 0, sq = 0;
  for (let i = 0; i < d.length; i += 4) {
    const v = (d[i] + d[i + 1] + d[i + 2]) / 3;
    n++; sum += v; sq += v * v;
  }
  const mean = sum / n;
  return sq / n - mean * mean;
}"""


@pytest.fixture(scope="module")
def browser():  # type: ignore[no-untyped-def]
    if not CHROMIUM.exists():
        pytest.skip("Chromium is not installed at /usr/bin/chromium (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install '.[browser]'")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
        yield b
        b.close()


def test_the_report_opens_offline_shows_hostile_text_as_text_and_draws_the_timeline(
    browser, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    s = stories.story(rounds=3, findings_per_round=4, tasks=2)
    page_file = tmp_path / "report.html"
    page_file.write_text(view.render(s, "html", ROOT / "templates"))
    ctx = browser.new_context(viewport={"width": 1100, "height": 1400})
    page = ctx.new_page()
    requests: list[str] = []
    console_errors: list[str] = []
    dialogs: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.on("console", lambda m: console_errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: console_errors.append(str(e)))
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    url = page_file.as_uri()
    page.goto(url, wait_until="load")
    page.wait_for_timeout(300)  # anything late (an image error handler) has its chance

    assert console_errors == []
    assert requests == [url], f"requests besides the page itself: {requests[1:]}"
    assert page.locator("#timeline svg").count() == 1
    assert page.locator("#timeline svg g.event").count() == len(s.events)
    finding = page.locator("td.finding-text", has_text="<script>document.title")
    assert finding.count() == 1
    assert finding.first.is_visible()
    assert finding.first.inner_text() == stories.SCRIPT_FINDING
    assert page.locator("script").count() == 0
    assert page.locator("td.finding-text img").count() == 0
    assert page.title() == f"plan-build session {s.header.id}"  # the planted script never ran
    assert dialogs == []  # nor the onerror handler

    shot = page.screenshot(full_page=False)
    ctx.close()
    probe = browser.new_page()
    variance = probe.evaluate(VARIANCE, "data:image/png;base64," + base64.b64encode(shot).decode())
    probe.close()
    assert variance > 100, f"the screenshot looks blank (pixel variance {variance:.1f})"
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    tmp = tmp_path / "report.png"
    tmp.write_bytes(shot)
    shutil.copyfile(tmp, SCREENSHOT)


WIDTH_JS = """() => {
  const box = (sel) => document.querySelector(sel).getBoundingClientRect();
  return {
    table: box('#files').right,
    status: box('#files th:nth-child(2)').right,
    removed: box('#files th:nth-child(4)').right,
    scroll: document.documentElement.scrollWidth,
    folded: box('#more-files table').right,
    findings: box('table.findings').right,
    outcome: box('table.findings th:nth-child(6)').right,
  };
}"""


def test_a_255_byte_file_name_wraps_and_every_column_stays_on_the_page(
    browser, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    s = stories.big_change(view.MAX_FILE_ROWS + 50, long_name=True)
    page_text = view.render(s, "html", ROOT / "templates")
    viewport = 800
    ctx = browser.new_context(viewport={"width": viewport, "height": 900})
    page = ctx.new_page()
    page_file = tmp_path / "report.html"
    page_file.write_text(page_text)
    page.goto(page_file.as_uri(), wait_until="load")
    page.locator("#more-files > summary").click()  # the folded rows open without a script
    assert page.locator("#more-files table tr").count() == 50
    widths = page.evaluate(WIDTH_JS)
    assert widths["table"] <= viewport, widths
    assert widths["removed"] <= viewport, widths  # the last column is on the page
    assert widths["folded"] <= viewport, widths
    assert widths["findings"] <= viewport, widths  # a finding's place in that file wraps too
    assert widths["outcome"] <= viewport, widths
    assert widths["scroll"] <= viewport, widths  # nothing scrolls sideways
    page.evaluate("document.querySelector('#files').scrollIntoView()")
    page.screenshot(path=str(tmp_path / "files.png"))  # the table's top, as a person sees it
    ctx.close()

    # the same page without the two rules: the long name pushes the columns off the page
    bare = page_text.replace("table.files { table-layout: fixed; }", "").replace(
        "overflow-wrap: anywhere; word-break: break-all;", ""
    )
    assert bare != page_text
    ctx = browser.new_context(viewport={"width": viewport, "height": 900})
    page = ctx.new_page()
    page_file.write_text(bare)
    page.goto(page_file.as_uri(), wait_until="load")
    bare_widths = page.evaluate(WIDTH_JS)
    assert bare_widths["removed"] > viewport
    assert bare_widths["outcome"] > viewport
    ctx.close()
