"""The Jobs page as a person sees it at 1280x800, on a 820x1180 tablet and on a 390x844 phone:
every job's state, placement, SLO, pending reason (whole words, nothing clipped) and Cancel
button inside the window, with no sideways scroll, as the server renders the rows (no
JavaScript) and as the live layer redraws them. Below about 1010 px, where the table would not
fit, each row is a card. A job's restarts reach the open page live (marker, checkpoint,
interruptions), drawn as the server draws them, its steps shown never going down.
Screenshots: console-jobs-<wide, tablet or narrow>[-no-js].png, console-jobs-restarts-<size>[-open].png."""
from datetime import timedelta

import pytest
from django.db.models import F
from django.db.models.functions import Greatest
from django.utils import timezone

from scheduler.live import job_changed
from scheduler.models import Job, JobInterruption

from .browser import (
    SIZES,
    WAIT_MS,
    cancel,
    chromium as chromium,
    demo as demo,
    off_the_loop,
    quiet_database as quiet_database,
    stack as stack,
    submit_job,
)

# The stack, the browser, the demo cluster and the quiet teardown are the browser module's
# fixtures: `as` marks them re-exported, for pytest to find by name.
from .conftest import ARTIFACTS

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres_tier]

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


#: The Progress cell of one job as the page shows it, in one go.
PROGRESS = """(id) => {
  const row = document.querySelector(`#jobs-table tr[data-job='${id}']`);
  if (!row) return null;
  const cell = row.querySelector("td.progress");
  const text = (selector) => { const el = cell.querySelector(selector); return el ? el.textContent : null; };
  const marker = cell.querySelector(".badge.restarts");
  const box = marker && marker.getBoundingClientRect();
  return {
    steps: text(".steps"), best: text(".best"), checkpoint: text(".checkpoint"), summary: text("summary"),
    open: cell.querySelector("details[open]") !== null,
    items: [...cell.querySelectorAll("li")].map((li) => li.textContent.replace(/\\s+/g, " ").trim()),
    marker: marker && {text: marker.textContent, title: marker.title, label: marker.getAttribute("aria-label"),
                       role: marker.getAttribute("role"), left: box.left, right: box.right,
                       visible: box.width > 0 && box.height > 0},
    clipped: cell.scrollWidth > cell.clientWidth + 1,
  };
}"""

#: Records, at every change of the table, the most steps the job's row shows (its best when a
#: restart left it behind, else its current step): the page must never show fewer than before.
WATCH_STEPS = """(id) => {
  window.__shown = [];
  const record = () => {
    const row = document.querySelector(`#jobs-table tr[data-job='${id}']`);
    if (!row) return;
    const best = row.querySelector("td.progress .best");
    const steps = Number(row.querySelector("td.progress .steps").textContent.split(" / ")[0]);
    window.__shown.push(best ? Number(best.textContent.replace("best ", "")) : steps);
  };
  record();
  new MutationObserver(record).observe(document.querySelector("#jobs-table tbody"), {childList: true, subtree: true});
}"""


def progress(job_id, **fields):
    """An agent's report as H2's service stores it: the run's position, the best, the checkpoint."""
    def write():
        Job.objects.filter(pk=job_id).update(**fields, steps_done=Greatest("steps_done", fields["current_step"]))
        job_changed(Job.objects.get(pk=job_id))
    off_the_loop(write)


def restart(job_id, *, reason):
    """A round's move of the running job as H2's service records it: one interruption, the job's
    restart counters, and its current run back at its checkpoint; one live event."""
    def write():
        job = Job.objects.get(pk=job_id)
        lost = job.current_step - job.checkpoint_step
        JobInterruption.objects.create(job=job, kind="moved", reason=reason, at=timezone.now() - timedelta(seconds=5),
                                       was_running=True, steps_done=job.current_step, resume_step=job.checkpoint_step,
                                       steps_lost=lost)
        Job.objects.filter(pk=job_id).update(restarts=F("restarts") + 1, steps_lost=F("steps_lost") + lost,
                                             resume_step=F("checkpoint_step"), current_step=F("checkpoint_step"))
        job_changed(job)
    off_the_loop(write)


def drawn(cell):
    """What a Progress cell says, wherever it lies."""
    marker = {key: value for key, value in cell["marker"].items() if key not in ("left", "right")}
    return {**cell, "marker": marker}


def wait_progress(page, job_id, condition):
    page.wait_for_function(f"(id) => {{ const p = ({PROGRESS})(id); return p !== null && ({condition}); }}",
                           arg=job_id, timeout=WAIT_MS)
    return page.evaluate(PROGRESS, job_id)


@pytest.mark.parametrize("size", ["wide", "narrow"])
def test_a_restart_reaches_the_open_page_and_its_steps_never_go_down(stack, chromium, demo, size):
    base, _ = stack
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    job_id = submit_job(base, demo["alice"], min_throughput=3, max_gpus=1, total_steps=5000)
    page = signed_in_page(chromium, base, size)
    page.wait_for_selector("#live-status[data-status=live]", timeout=WAIT_MS)
    page.wait_for_selector(f'#jobs-table tr[data-job="{job_id}"][data-state="placed"]', timeout=WAIT_MS)
    page.evaluate("window.__notReloaded = true")
    page.evaluate(WATCH_STEPS, job_id)

    progress(job_id, current_step=1540, checkpoint_step=1200)
    shown = wait_progress(page, job_id, "p.steps === '1540 / 5000'")
    assert (shown["best"], shown["checkpoint"], shown["marker"], shown["summary"]) == (None, "checkpoint 1200", None,
                                                                                          None)

    restart(job_id, reason="Moved to 1 x v100 by round 12: saves 40 W.")
    shown = wait_progress(page, job_id, "p.marker !== null")
    sentence = "1 restart, 340 steps lost; last checkpoint at step 1200"
    assert shown["marker"]["text"] == "\u21bb 1" and shown["marker"]["role"] == "img"
    assert shown["marker"]["title"] == shown["marker"]["label"] == sentence
    assert inside(shown["marker"], VIEWPORTS[size][0]) and not shown["clipped"]
    assert (shown["steps"], shown["best"], shown["summary"]) == ("1200 / 5000", "best 1540", "Interruptions (1)")
    assert shown["items"][0].startswith("moved ") and shown["items"][0].endswith(
        "UTC: Moved to 1 x v100 by round 12: saves 40 W. 340 steps lost (stopped at 1540, resumed at 1200).")
    page.screenshot(path=str(ARTIFACTS / f"console-jobs-restarts-{size}.png"), full_page=True)
    check_rows(page, size, {"restarted": job_id})

    # the server draws the same cell (no JavaScript)
    static = signed_in_page(chromium, base, size, javascript=False)
    assert drawn(static.evaluate(PROGRESS, job_id)) == drawn(shown)
    static.context.close()

    # the opened interruptions stay open while live events redraw the row; the run passes its best
    page.click(f'#jobs-table tr[data-job="{job_id}"] details.interruptions summary')
    progress(job_id, current_step=1600, checkpoint_step=1600)
    shown = wait_progress(page, job_id, "p.steps === '1600 / 5000'")
    assert (shown["best"], shown["checkpoint"], shown["open"]) == (None, "checkpoint 1600", True)
    assert shown["marker"]["title"] == "1 restart, 340 steps lost; last checkpoint at step 1600"
    page.screenshot(path=str(ARTIFACTS / f"console-jobs-restarts-{size}-open.png"), full_page=True)

    seen = page.evaluate("window.__shown")
    assert seen[0] == 0 and seen[-1] == 1600 and 1540 in seen
    assert seen == sorted(seen), f"the page showed fewer steps than before: {seen}"
    assert page.evaluate("window.__notReloaded") is True and page.errors == []
    page.context.close()
