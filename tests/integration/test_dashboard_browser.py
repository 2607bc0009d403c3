"""The dashboard in a real browser: Playwright driving Debian's Chromium (headless, no browser
download) against a real daphne with the Redis channel layer and a real Celery worker on
Redis. Screenshots of every page at 1280x800 and 390x844 go to GOGH_TEST_ARTIFACTS (default
var/test-artifacts/). A missing Chromium fails the run; nothing is skipped."""

import pytest
from django.db import transaction
from django.utils import timezone
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from catalog.models import GpuType
from gogh_web.dashboard.tradeoff import sweep_grid
from scheduler.live import job_changed
from scheduler.models import Job, SolverConfigChange
from telemetry.models import Node
from telemetry.services.executor_inventory import executor_inventory_apply
from telemetry.services.nodes import node_register

from .browser import (
    PAGES,
    PREVIEWS_PER_MINUTE,
    SIZES,
    WAIT_MS,
    cancel,
    chromium as chromium,
    demo as demo,
    off_the_loop,
    placed_past_the_cool_down,
    quiet_database as quiet_database,
    signed_in,
    stack as stack,
    submit_job,
    sweep_rendered,
)
from .conftest import ARTIFACTS

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres_tier]


def test_submitted_job_appears_and_changes_state_without_reload(stack, chromium, demo):
    base, _ = stack
    page = signed_in(chromium, base, "alice")
    page.wait_for_selector("#live-status[data-status=live]", timeout=WAIT_MS)
    page.evaluate("window.__notReloaded = true")
    job_id = submit_job(base, demo["alice"])
    row = f'#jobs-table tr[data-job="{job_id}"]'
    page.wait_for_selector(row, timeout=WAIT_MS)
    # a scheduling round in the worker places it; the row follows without a reload
    page.wait_for_selector(f'{row}[data-state="placed"]', timeout=WAIT_MS)
    assert "2 x v100" in page.inner_text(row) or "1 x v100" in page.inner_text(row)
    # cancel from the page (REST API, session + CSRF token): the row follows
    page.click(f"{row} button[data-cancel]")
    page.wait_for_selector(f'{row}[data-state="cancelled"]', timeout=WAIT_MS)
    # submit from the page's form
    page.click("#submit-panel summary")
    page.fill("#submit-form input[name=min_throughput]", "3")
    page.click("#submit-form button[type=submit]")
    page.wait_for_selector("#submit-message.ok", timeout=WAIT_MS)
    form_job = int(page.inner_text("#submit-message").split()[-1].rstrip("."))
    page.wait_for_selector(f'#jobs-table tr[data-job="{form_job}"]', timeout=WAIT_MS)
    assert page.evaluate("window.__notReloaded") is True
    assert page.errors == []


def test_a_node_registered_after_load_appears_on_the_cluster_page(stack, chromium, demo, make_user):
    base, _ = stack
    page = signed_in(chromium, base, "alice")
    page.goto(base + "/dashboard/")
    page.wait_for_selector("#live-status[data-status=live]", timeout=WAIT_MS)
    assert page.inner_text("#nodes-count") == "1"
    agent = make_user("agent-b", agent=True)

    def register():
        with transaction.atomic():
            return node_register(agent_user=agent, hostname="gpu-b", labels={}, cell="", agent_version="test",
                                 gpus=[{"index": 0, "uuid": "GPU-b0", "gpu_type": "v100"}])[0]

    node = off_the_loop(register)
    page.wait_for_selector(f'#node-table tr[data-node="{node.pk}"]', timeout=WAIT_MS)
    assert page.inner_text("#nodes-count") == "2"
    # the new GPU, counted by type and state (its event may come just after the node's)
    page.wait_for_function(
        "() => document.getElementById('gpu-type-table').innerText.includes('healthy 3')", timeout=WAIT_MS
    )
    assert page.errors == []


def test_a_slurm_node_and_a_gpu_others_hold_show_live_on_the_cluster_page(stack, chromium, demo):
    """Slurm's inventory brings a node (managed by Slurm) with a GPU a foreign job holds: the node
    table says who manages it and names the holder under it, the GPUs-by-type table counts it
    held; the holder's job ends and both follow, without a reload."""
    base, _ = stack
    page = signed_in(chromium, base, "alice")
    page.goto(base + "/dashboard/")
    page.wait_for_selector("#live-status[data-status=live]", timeout=WAIT_MS)
    assert page.inner_text("#node-table tr[data-node] .managed-by") == "GOGH agent"

    def slurm(holders):
        with transaction.atomic():
            executor_inventory_apply(manager="slurm", holders=holders,
                                     nodes=[{"name": "n-v100", "up": True, "reason": "", "gpus": {"v100": 2}}])
        return Node.objects.get(hostname="n-v100")

    node = off_the_loop(lambda: slurm({("n-v100", 1): "someone-else (Slurm job 12)"}))
    row = f'#node-table tr[data-node="{node.pk}"]'
    page.wait_for_selector(row, timeout=WAIT_MS)
    assert page.inner_text(f"{row} .managed-by") == "Slurm"
    page.wait_for_function(
        "r => { const el = document.querySelector(r + ' .held');"
        " return el && el.innerText === 'GPU 1 held by someone-else (Slurm job 12)'; }",
        arg=row, timeout=WAIT_MS,
    )
    page.wait_for_function(
        "() => document.getElementById('gpu-type-table').innerText.includes('held 1')", timeout=WAIT_MS
    )
    off_the_loop(lambda: slurm({}))
    page.wait_for_function("r => !document.querySelector(r + ' .held')", arg=row, timeout=WAIT_MS)
    page.wait_for_function(
        "() => !document.getElementById('gpu-type-table').innerText.includes('held')", timeout=WAIT_MS
    )
    assert page.errors == []


def test_trade_off_plot_renders_in_webgl_and_preview_updates_it(stack, chromium, demo):
    base, _ = stack
    job_id = submit_job(base, demo["alice"])
    placed_past_the_cool_down(job_id)
    page = signed_in(chromium, base, "alice")
    page.goto(base + "/dashboard/tradeoff/")
    sweep_rendered(page)
    # one tenant: drawn flat, as SVG (two tenants in 3D WebGL: test_console_tradeoff_browser.py)
    assert page.locator("#tradeoff-plot .scatterlayer .point").count() >= 2
    points = page.evaluate("() => document.getElementById('tradeoff-plot').data.map(t => t.x.length)")
    assert points == [len(sweep_grid()), 1, 0]  # the sweep, where the cluster runs now, no preview yet
    # the form shows the live settings (surplus not valued); the sweep names its own assumption
    assert page.input_value("#surplus") == "0.0"
    assert "the sweep's assumption" in page.inner_text("#sweep-status")

    page.fill("#weight-slider", "0.05")
    assert page.input_value("#weight") == "0.05"  # the slider writes into the exact field
    page.uncheck("#adaptive")  # exactly this weight, whatever the load of the rounds so far
    page.fill("#surplus", "100")  # value surplus throughput, so the low weight buys the second GPU
    page.click("#preview")
    page.wait_for_function("() => document.getElementById('tradeoff-plot').data[2].x.length === 1", timeout=WAIT_MS)
    moves = page.locator("#moves li")
    assert moves.count() >= 1
    assert "0.050" in page.inner_text("#preview-summary")
    # at weight 0.05 the surplus is worth the second GPU: the job placed on one would move
    assert page.locator("#moves li[data-kind]").count() >= 1, page.inner_text("#moves")
    # previews are throttled per user: the one past the rate is refused, and the page says so
    for _ in range(PREVIEWS_PER_MINUTE):
        page.click("#preview")
        page.wait_for_function("() => !document.getElementById('tradeoff-message').textContent.startsWith('Solving')",
                               timeout=WAIT_MS)
    assert page.inner_text("#tradeoff-message").startswith("Too many previews")

    # the sweep is asked for again on a job's state change, not on its progress reports
    page.wait_for_selector("#live-status[data-status=live]", timeout=WAIT_MS)
    counts = (
        "() => [Number(document.getElementById('tradeoff-plot').dataset.loads),"
        " Number(document.getElementById('tradeoff-plot').dataset.events || 0)]"
    )
    loads, events = page.evaluate(counts)

    def progress():
        Job.objects.filter(pk=job_id).update(steps_done=100)
        job_changed(Job.objects.get(pk=job_id))

    off_the_loop(progress)
    page.wait_for_function(
        f"() => Number(document.getElementById('tradeoff-plot').dataset.events || 0) > {events}", timeout=WAIT_MS
    )
    page.wait_for_timeout(2500)  # longer than any debounce the page ever had
    assert page.evaluate(counts)[0] == loads  # progress alone: no new request
    cancel(base, demo["alice"], job_id)
    page.wait_for_function(
        f"() => Number(document.getElementById('tradeoff-plot').dataset.loads) === {loads + 1}", timeout=WAIT_MS
    )
    assert page.errors == []


def test_a_user_cannot_apply_but_staff_can(stack, chromium, demo):
    base, _ = stack
    page = signed_in(chromium, base, "alice")
    page.goto(base + "/dashboard/tradeoff/")
    assert page.locator("#apply").count() == 0
    status = page.evaluate(
        "() => GoghDash.api('POST', '/dashboard/api/tradeoff/apply/', {base_energy_weight: 2, adaptive_weight: false,"
        " load_window: 5, throughput_value_w: 100}).then(r => r.status)"
    )
    assert status == 403 and not SolverConfigChange.objects.exists()

    staff_page = signed_in(chromium, base, "operator")
    staff_page.goto(base + "/dashboard/tradeoff/")
    staff_page.fill("#weight", "2")
    staff_page.click("#apply")
    staff_page.wait_for_selector("#tradeoff-message.ok", timeout=WAIT_MS)
    # only the field the operator moved: the surplus value is not switched on behind their back
    changes = [(c.field, c.new_value) for c in SolverConfigChange.objects.filter(changed_by=demo["operator"])]
    assert changes == [("base_energy_weight", "2.0")]


@pytest.mark.parametrize("size", SIZES)
def test_screenshots_of_every_page_and_no_sideways_scroll(stack, chromium, demo, size):
    base, _ = stack
    submit_job(base, demo["alice"])
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page = signed_in(chromium, base, "operator", size)
    for name, path in PAGES.items():
        page.goto(base + path)
        if name == "tradeoff":
            sweep_rendered(page)
        if name == "cluster":  # the two fresh samples, as rendered and as live.js re-draws them
            assert page.inner_text("#power-now") == "270 W"
        page.wait_for_selector("#live-status[data-status=live]", timeout=WAIT_MS)
        page.screenshot(path=str(ARTIFACTS / f"dashboard-{name}-{size}.png"), full_page=True)
        overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 1, f"{name} scrolls sideways by {overflow} px at {SIZES[size]}"
    assert page.errors == []
    login = chromium.new_page(viewport=dict(zip(("width", "height"), SIZES[size])))
    login.goto(base + "/accounts/login/")
    login.screenshot(path=str(ARTIFACTS / f"dashboard-login-{size}.png"))
    assert all((ARTIFACTS / f"dashboard-{name}-{size}.png").stat().st_size > 0 for name in PAGES)


# Collects what the browser blocks under the page's Content-Security-Policy, from before any
# page script runs (Playwright's init scripts are not subject to the policy).
CSP_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", function (e) {
  window.__cspViolations.push(e.violatedDirective + " " + (e.blockedURI || "inline") + " " + e.sourceFile + ":"
                              + e.lineNumber + " " + (e.target.id ? "#" + e.target.id : e.target.nodeName || ""));
});
"""
ADMIN_PAGES = ["/admin/", "/admin/scheduler/job/", "/admin/telemetry/node/", "/admin/scheduler/service/"]


def test_every_page_works_under_the_content_security_policy(stack, chromium, demo):
    """Console pages (Plotly's 2D and WebGL plots, the live socket, the forms) and the admin's,
    with no violation of the policy and no error in the browser's console."""
    base, _ = stack
    submit_job(base, demo["alice"])
    type(demo["operator"]).objects.filter(pk=demo["operator"].pk).update(is_superuser=True)  # every admin page
    context = chromium.new_context(viewport=dict(zip(("width", "height"), SIZES["wide"])))
    context.add_init_script(CSP_VIOLATIONS)
    page = context.new_page()
    console = []

    def on_console(message):  # where Chromium reports what a policy blocked
        # the admin's pages name no icon: the browser's guess, /favicon.ico, is a 404 unrelated to the policy
        if message.type == "error" and not message.location["url"].endswith("/favicon.ico"):
            console.append(f"{page.url}: {message.text} ({message.location['url']})")

    page.on("console", on_console)
    page.on("pageerror", lambda error: console.append(f"{page.url}: {error}"))
    violations = []
    response = page.goto(base + "/accounts/login/")
    assert "script-src 'self'" in response.headers["content-security-policy"]
    page.fill("#id_username", "operator")
    page.fill("#id_password", "pw-operator")
    page.click("button[type=submit]")
    page.wait_for_url(base + "/dashboard/")
    for name, path in PAGES.items():
        response = page.goto(base + path)
        assert "content-security-policy" in response.headers
        page.wait_for_selector("#live-status[data-status=live]", timeout=WAIT_MS)  # the socket: connect-src
        if name == "tradeoff":
            sweep_rendered(page)  # Plotly's WebGL scatter
        if name == "cluster":
            assert page.inner_text("#power-now") == "270 W"
        violations += page.evaluate("window.__cspViolations")
    page.goto(base + PAGES["jobs"])
    page.click("#submit-panel summary")  # a form posting through the page's script
    page.fill("#submit-form input[name=min_throughput]", "3")
    page.click("#submit-form button[type=submit]")
    page.wait_for_selector("#submit-message.ok", timeout=WAIT_MS)
    violations += page.evaluate("window.__cspViolations")
    for path in ADMIN_PAGES:
        response = page.goto(base + path)
        assert response.status == 200 and "content-security-policy" in response.headers
        violations += page.evaluate("window.__cspViolations")
    assert violations == [], "\n".join(violations)
    assert console == [], "\n".join(console)


def test_a_profiling_campaign_shows_on_the_cluster_page_live(stack, chromium, demo, make_user):
    """A node brings a type the catalog has never measured (a100): the Cluster page says
    "datasheet only"; a campaign starts and its progress shows; cancelled, the type is back to
    "datasheet only": each without a reload (the live kind gpu_type_profile)."""
    from scheduler.models import ProfilingCampaign
    from scheduler.profiling.services import campaign_cancel, campaign_start

    base, _ = stack
    page = signed_in(chromium, base, "operator")
    page.goto(base + "/dashboard/")
    page.wait_for_selector("#live-status[data-status=live]", timeout=WAIT_MS)
    agent = make_user("agent-a100", agent=True)

    def register():
        with transaction.atomic():
            GpuType.objects.create(name="a100", memory_gb=40, tdp_w=400, idle_w=50, power_curve=[[0, 50], [1, 400]])
            node = node_register(agent_user=agent, hostname="gpu-a100", labels={}, cell="", agent_version="test",
                                 gpus=[{"index": 0, "uuid": "GPU-x0", "gpu_type": "a100"}])[0]
            node.approved_at = timezone.now()
            node.save(update_fields=["approved_at"])

    def row_says(text):
        try:
                page.wait_for_function(
                "t => Array.from(document.querySelectorAll('#gpu-type-table tr')).some(r => r.cells[0]"
                " && r.cells[0].innerText === 'a100' && r.querySelector('.profile').innerText === t)",
                arg=text, timeout=WAIT_MS,
            )
        except PlaywrightTimeoutError:
            pytest.fail(page.inner_text("#gpu-type-table"))

    off_the_loop(register)
    row_says("datasheet only")
    assert page.evaluate(
        "() => Array.from(document.querySelectorAll('#gpu-type-table tr')).find(r => r.cells[0].innerText === 'v100')"
        ".querySelector('.profile').innerText"
    ) == "measured, not profiled"
    operator = demo["operator"]

    def start():
        with transaction.atomic():
            return campaign_start(gpu_type=GpuType.objects.get(name="a100"), trigger="admin", requested_by=operator)

    campaign = off_the_loop(start)
    settled = len(campaign.failures)  # the suite's cases whose workloads this catalog lacks fail at once
    assert 0 < settled < len(campaign.cases)
    row_says(f"profiling {settled} of {len(campaign.cases)} cases")

    def cancel():
        with transaction.atomic():
            campaign_cancel(campaign=ProfilingCampaign.objects.get(pk=campaign.pk), by=operator)

    off_the_loop(cancel)
    row_says("datasheet only")
    assert page.errors == []
