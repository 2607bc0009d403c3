"""The Jobs page as a person sees it at 1280x800, on a 820x1180 tablet and on a 390x844 phone:
every job's state, placement, SLO, pending reason (whole words, nothing clipped) and Cancel
button inside the window, with no sideways scroll, as the server renders the rows (no
JavaScript) and as the live layer redraws them. Below about 1010 px, where the table would not
fit, each row is a card. Screenshots: console-jobs-<wide, tablet or narrow>[-no-js].png."""
import pytest

from scheduler.models import Job

# The stack, the browser, the demo cluster and the quiet teardown are the browser module's
# fixtures: `as` marks them re-exported, for pytest to find by name.
from .test_dashboard_browser import (
    ARTIFACTS,
    SIZES,
    WAIT_MS,
    cancel,
    chromium as chromium,
    demo as demo,
    quiet_database as quiet_database,
    stack as stack,
    submit_job,
)

pytestmark = pytest.mark.django_db(transaction=True)

VIEWPORTS = {**SIZES, "tablet": (820, 1180)}

#: What the page shows of each row, measured in the browser in one go (the live layer may redraw
#: the rows at any time): each part's box against the window (no part cut off or only reachable
#: by scrolling sideways), each cell's content against its box (nothing clipped), and the words
#: of the pending reason split over two lines (none).
ROWS_LAYOUT = """() => [...document.querySelectorAll("#jobs-table tbody tr[data-job]")].map((row) => {
  const width = window.innerWidth;
  const box = (el) => { const r = el.getBoundingClientRect();
    return {left: r.left, right: r.right, width: r.width, visible: r.width > 0 && r.height > 0}; };
  const part = (selector) => { const el = row.querySelector(selector);
    return el ? {...box(el), text: el.innerText} : null; };
  const cells = [...row.cells].map((cell) => ({...box(cell), clipped: cell.scrollWidth > cell.clientWidth + 1}));
  const reason = row.querySelector(".reason");
  const splitWords = [];
  if (reason) {
    const text = reason.firstChild, words = /\\S+/g;
    for (let m; (m = words.exec(text.data));) {
      const range = document.createRange();
      range.setStart(text, m.index);
      range.setEnd(text, m.index + m[0].length);
      const lines = new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top)));
      if (lines.size > 1) splitWords.push(m[0]);
    }
  }
  return {
    id: Number(row.dataset.job), dataState: row.dataset.state, width, display: getComputedStyle(row).display, cells,
    state: part(".badge[class*=state-]"), slo: part(".badge[class*=slo-]"), placement: part("td:nth-child(5)"),
    reason: reason ? {...box(reason), text: reason.innerText, clipped: reason.scrollWidth > reason.clientWidth,
                      splitWords} : null,
    cancel: part("button[data-cancel]"),
    labels: [...row.cells].map((cell) => getComputedStyle(cell, "::before").content),
  };
})"""


def inside(part, width):
    return part is not None and part["visible"] and part["left"] >= -0.5 and part["right"] <= width + 0.5


def jobs(base, users):
    """A placed job, one no GPU can serve (pending with a long reason), one waiting for capacity
    or placed (the solver's choice) and one cancelled; returns their ids once a round decided."""
    alice = users["alice"]
    ids = {
        "placed": submit_job(base, alice, min_throughput=5, priority=5, name="resnet50-sweep-lr0.1-seed3"),
        "impossible": submit_job(base, alice, min_throughput=50),
        "second": submit_job(base, alice, min_throughput=3, max_gpus=1),
        "cancelled": submit_job(base, alice, min_throughput=3),
    }
    cancel(base, alice, ids["cancelled"])
    return ids


def wait_decided(page, ids):
    """Until the round has placed the first job and given the impossible one its reason."""
    page.wait_for_selector(f'#jobs-table tr[data-job="{ids["placed"]}"][data-state="placed"]', timeout=WAIT_MS)
    page.wait_for_function(
        "(id) => (document.querySelector(`#jobs-table tr[data-job='${id}'] .reason`) || {}).innerText"
        "?.startsWith('No GPU type reaches')", arg=ids["impossible"], timeout=WAIT_MS)


def check_rows(page, size, ids):
    """Every row of the page shown whole."""
    rows = page.evaluate(ROWS_LAYOUT)
    assert {got["id"] for got in rows} >= set(ids.values())
    for got in rows:
        state, width, where = got["dataState"], got["width"], f"job {got['id']} at {VIEWPORTS[size]}: {got}"
        assert all(inside(cell, width) for cell in got["cells"] if cell["visible"]), where
        assert not any(cell["clipped"] for cell in got["cells"]), where
        assert inside(got["state"], width) and got["state"]["text"] == state, where
        assert inside(got["slo"], width) and got["slo"]["text"] in ("met", "violated", "unknown"), where
        assert inside(got["placement"], width), where
        if state == "pending":
            reason = got["reason"]
            assert reason is not None and reason["text"], where
            assert inside(reason, width) and not reason["clipped"] and reason["splitWords"] == [], where
            if got["id"] == ids["impossible"]:  # the whole sentence, as stored
                assert reason["text"] == Job.objects.get(pk=got["id"]).pending_reason, where
        if state in ("pending", "placed", "running"):
            assert inside(got["cancel"], width), where
        else:
            assert got["cancel"] is None, where
        if state == "placed":
            assert " x v100" in got["placement"]["text"], where
        if size != "wide":  # a card: the cells are labelled, the column headers are gone
            assert got["display"] != "table-row" and '"Placement"' in got["labels"][4], where
        else:  # the wide table is unchanged
            assert got["display"] == "table-row" and all(label == "none" for label in got["labels"]), where
    overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 1, f"the jobs page scrolls sideways by {overflow} px at {VIEWPORTS[size]}"


def signed_in_page(chromium, base, size, javascript=True):
    width, height = VIEWPORTS[size]
    context = chromium.new_context(viewport={"width": width, "height": height}, java_script_enabled=javascript)
    page = context.new_page()
    page.errors = []
    page.on("pageerror", lambda error: page.errors.append(str(error)))
    page.goto(base + "/dashboard/jobs/")
    page.fill("#id_username", "operator")
    page.fill("#id_password", "pw-operator")
    page.click("button[type=submit]")
    page.wait_for_url(base + "/dashboard/jobs/")
    return page


@pytest.mark.parametrize("size", VIEWPORTS)
def test_every_job_is_shown_whole_and_live_updates_keep_it_so(stack, chromium, demo, size):
    base, _ = stack
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    ids = jobs(base, demo)
    page = signed_in_page(chromium, base, size)
    page.wait_for_selector("#live-status[data-status=live]", timeout=WAIT_MS)
    wait_decided(page, ids)
    page.screenshot(path=str(ARTIFACTS / f"console-jobs-{size}.png"), full_page=True)  # kept when a check fails
    check_rows(page, size, ids)

    # the rows as the server renders them, before (or without) any script
    static = signed_in_page(chromium, base, size, javascript=False)
    static.screenshot(path=str(ARTIFACTS / f"console-jobs-{size}-no-js.png"), full_page=True)
    check_rows(static, size, ids)
    static.context.close()

    # Cancel is reachable on the card; the live update redraws the rows, still whole
    row = f'#jobs-table tr[data-job="{ids["placed"]}"]'
    page.click(f"{row} button[data-cancel]")
    page.wait_for_selector(f'{row}[data-state="cancelled"]', timeout=WAIT_MS)
    check_rows(page, size, ids)
    assert page.errors == []
    page.context.close()
