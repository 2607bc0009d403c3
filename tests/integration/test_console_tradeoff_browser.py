"""The Trade-off page as a person reads it, at 1280x800 and 390x844 in Debian's Chromium (the
stack, browser and demo cluster of test_dashboard_browser.py): axis titles inside the chart,
markers that need no emoji font, one tenant drawn flat (throughput x power) and said so, two in
3D, preview figures that its listed changes add up to, and no stale preview after Apply.
Screenshots go to GOGH_TEST_ARTIFACTS as console-tradeoff-<case>-<size>.png."""
import base64

import pytest

from .browser import (
    SIZES,
    WAIT_MS,
    chromium as chromium,
    demo as demo,
    placed_past_the_cool_down,
    quiet_database as quiet_database,
    signed_in,
    stack as stack,
    submit_job,
    sweep_rendered,
)

# The stack, the browser, the demo cluster and the quiet teardown are the browser module's
# fixtures: `as` marks them re-exported, for pytest to find by name.
from .conftest import ARTIFACTS

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres_tier]

# Plotly draws a 3D marker as a text glyph (its scatter3d symbol table); a 2D one as an SVG path.
GLYPHS_3D = {"circle": "\u25cf", "circle-open": "\u25cb", "square": "\u25a0", "square-open": "\u25a1",
             "diamond": "\u25c6", "diamond-open": "\u25c7", "cross": "+", "x": "\u274c"}

# Is a glyph drawn differently from a character no font has (the empty box a missing glyph
# draws as)? Both are drawn on a canvas in the page's fonts and their pixels compared.
DRAWN_LIKE_MISSING = """glyph => {
  function pixels(text) {
    const canvas = document.createElement('canvas'); canvas.width = canvas.height = 64;
    const context = canvas.getContext('2d'); context.font = '48px sans-serif'; context.fillText(text, 4, 52);
    return Array.from(context.getImageData(0, 0, 64, 64).data).join(',');
  }
  return pixels(glyph) === pixels('\\u{10fffd}');
}"""

# The plot's pixels (a screenshot, as a data: image) scanned for ink in a band along its edges:
# anything drawn there (an axis title, a tick label) is cut off by the chart's border.
INK_AT_EDGES = """([png, band]) => new Promise(resolve => {
  const image = new Image();
  image.onload = () => {
    const canvas = document.createElement('canvas'); canvas.width = image.width; canvas.height = image.height;
    const context = canvas.getContext('2d'); context.drawImage(image, 0, 0);
    const data = context.getImageData(0, 0, image.width, image.height).data, ink = [];
    for (let y = 0; y < image.height; y++) for (let x = 0; x < image.width; x++) {
      const edge = x < band || x >= image.width - band || y >= image.height - band;
      const i = 4 * (y * image.width + x);
      if (edge && Math.min(data[i], data[i + 1], data[i + 2]) < 150) ink.push([x, y]);
    }
    resolve(ink.slice(0, 5));
  };
  image.src = 'data:image/png;base64,' + png;
})"""


def tradeoff_page(chromium, base, username, size):
    page = signed_in(chromium, base, username, size)
    page.goto(base + "/dashboard/tradeoff/")
    sweep_rendered(page)
    page.wait_for_selector("#live-status[data-status=live]", timeout=WAIT_MS)
    return page


def plot_data(page):
    return page.evaluate(
        "() => document.getElementById('tradeoff-plot').data.map(t => ({type: t.type, x: t.x.length,"
        " symbol: t.marker.symbol, size: t.marker.size}))"
    )


def assert_markers_readable(page, traces):
    symbols = {s for t in traces for s in (t["symbol"] if isinstance(t["symbol"], list) else [t["symbol"]])}
    assert symbols <= {"circle", "square", "diamond", "circle-open", "cross"}, symbols
    if traces[0]["type"] == "scatter3d":
        for symbol in symbols:
            assert not page.evaluate(DRAWN_LIKE_MISSING, GLYPHS_3D[symbol]), f"{symbol} draws as an empty box"
    assert all(t["size"] >= 10 for t in traces), traces  # big enough to see and hover


def screenshot(page, case, size):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"console-tradeoff-{case}-{size}.png"), full_page=True)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.usefixtures("default_power_limits")  # the preview's figures hand-checked at the default limit
def test_one_tenant_is_drawn_flat_with_its_titles_inside_and_the_preview_adds_up(stack, chromium, demo, size):
    base, _ = stack
    job_id = submit_job(base, demo["alice"])  # one job of one tenant: Jain's index is 1 at every point
    placed_past_the_cool_down(job_id)
    page = tradeoff_page(chromium, base, "alice", size)
    assert page.get_attribute("#tradeoff-plot", "data-dimensions") == "2"
    assert "One tenant" in page.inner_text("#tradeoff-axes") and page.is_visible("#tradeoff-axes")
    traces = plot_data(page)
    assert [(t["type"], t["x"]) for t in traces] == [("scatter", 21), ("scatter", 1), ("scatter", 0)]
    assert_markers_readable(page, traces)
    boxes = page.evaluate(
        "() => { const r = el => { const b = el.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; };"
        " const plot = document.getElementById('tradeoff-plot');"
        " return {plot: r(plot), titles: Array.from(plot.querySelectorAll('.xtitle, .ytitle')).map(r)}; }"
    )
    left, top, right, bottom = boxes["plot"]
    assert len(boxes["titles"]) == 2
    for title in boxes["titles"]:
        assert title[0] >= left and title[1] >= top and title[2] <= right and title[3] <= bottom, boxes
    # the short explanation, the rest one click away
    assert not page.is_visible(".how-to-read ul")
    page.click(".how-to-read summary")
    assert page.is_visible(".how-to-read ul")

    page.fill("#weight", "0.05")
    page.uncheck("#adaptive")
    page.fill("#surplus", "100")  # the surplus is worth the second GPU at this weight
    with page.expect_response(lambda response: "/preview/" in response.url, timeout=WAIT_MS) as answer:
        page.click("#preview")
    data = answer.value.json()
    page.wait_for_function("() => document.getElementById('tradeoff-plot').data[2].x.length === 1", timeout=WAIT_MS)
    moves = data["moves"]
    assert [m["job"] for m in moves] == [job_id], data
    # the totals move by exactly what the listed changes add up to (one set of predictions)
    for figure, field in (("throughput", "throughput"), ("power_w", "power_w")):
        listed = sum(m["to_" + field] - m["from_" + field] for m in moves)
        assert data["proposed"][figure] - data["current"][figure] == pytest.approx(listed, abs=1e-6), data
    item = page.locator(f"#moves li[data-job='{job_id}']")
    text = item.inner_text()
    assert item.get_attribute("data-kind") in ("place", "move") and "7.50 steps/s" in text and "500 W" in text
    assert "GPUs" in text and "(v100, alone)" in text, text  # where to, on what, and with whom
    summary = page.inner_text("#preview-summary")
    assert f"{data['proposed']['throughput']:.2f} steps/s" in summary
    screenshot(page, "one-tenant", size)
    assert page.errors == []


@pytest.mark.parametrize("size", SIZES)
def test_two_tenants_are_drawn_in_3d_with_titles_inside_and_markers_every_font_has(stack, chromium, demo, size):
    base, _ = stack
    submit_job(base, demo["alice"], max_gpus=1)
    submit_job(base, demo["operator"], max_gpus=1)
    page = tradeoff_page(chromium, base, "operator", size)
    assert page.get_attribute("#tradeoff-plot", "data-dimensions") == "3"
    assert "2 tenants" in page.inner_text("#tradeoff-axes")
    traces = plot_data(page)
    assert [t["type"] for t in traces] == ["scatter3d"] * 3 and traces[0]["x"] == 21
    assert_markers_readable(page, traces)
    webgl = page.evaluate(
        "() => { const c = document.querySelector('#tradeoff-plot .gl-container canvas');"
        " return !!c && !!(c.getContext('webgl') || c.getContext('experimental-webgl')); }"
    )
    assert webgl, "the 3D plot has no WebGL canvas"
    page.wait_for_timeout(500)  # the WebGL scene draws on the next animation frames
    screenshot(page, "two-tenants", size)
    png = base64.b64encode(page.locator("#tradeoff-plot").screenshot()).decode()
    assert page.evaluate(INK_AT_EDGES, [png, 3]) == [], "something is drawn against the chart's edge (clipped)"
    assert page.errors == []


@pytest.mark.parametrize("size", SIZES)
def test_apply_clears_the_preview_of_the_old_settings(stack, chromium, demo, size):
    base, _ = stack
    submit_job(base, demo["alice"])
    page = tradeoff_page(chromium, base, "operator", size)
    prompt = page.inner_text("#preview-summary")
    page.fill("#weight", "0.05")
    page.click("#preview")
    page.wait_for_function("() => document.getElementById('tradeoff-plot').data[2].x.length === 1", timeout=WAIT_MS)
    assert page.inner_text("#preview-summary") != prompt and page.locator("#moves li").count() >= 1
    page.click("#apply")
    page.wait_for_selector("#tradeoff-message.ok", timeout=WAIT_MS)
    page.wait_for_function("() => document.getElementById('tradeoff-plot').data[2].x.length === 0", timeout=WAIT_MS)
    assert page.inner_text("#preview-summary") == prompt and page.locator("#moves li").count() == 0
    screenshot(page, "applied", size)
    assert page.errors == []


def test_a_poll_that_fails_in_passing_does_not_stop_the_page_following_the_sweep(stack, chromium, demo):
    base, _ = stack
    placed_past_the_cool_down(submit_job(base, demo["alice"]))
    page = signed_in(chromium, base, "alice")
    failed = []

    def flaky(route):
        """The first two polls of the sweep get no answer, the next a 503, then the server."""
        if len(failed) < 3:
            failed.append(route.request.url)
            route.abort() if len(failed) < 3 else route.fulfill(status=503, body="busy")
        else:
            route.continue_()

    def still_solving(route):
        """The sweep as the page first gets it: still being solved (one point in). The workers
        can solve the whole sweep before the page's first answer is read (seen in CI: then the
        page never polls, and this test would test nothing), so its first answer is held to
        the moment a person usually sees."""
        response = route.fetch()
        body = response.json()
        body.update(status="solving", points=body["points"][:1])
        route.fulfill(response=response, json=body)

    page.route("**/dashboard/api/tradeoff/", still_solving)
    page.route("**/dashboard/api/tradeoff/*/", flaky)
    page.goto(base + "/dashboard/tradeoff/")
    sweep_rendered(page)
    assert len(failed) == 3  # it was polled through the failures, and drew the sweep after them
    assert page.get_attribute("#tradeoff-plot", "data-loads") == "1"  # by polling, not by asking anew
    assert page.is_hidden("#sweep-retry") and page.errors == []
