"""The Trade-off form and the Cluster chart in a real browser (the stack, Chromium and the demo
cluster of test_dashboard_browser.py): the form sends exactly the fields the user edited, at
any value the API accepts; an empty or invalid field is refused beside it and sends nothing;
settings applied elsewhere reach the open form; the per-GPU power and utilization bars stand
side by side."""
import json

import pytest

from gogh_web.dashboard.services import tradeoff_apply
from scheduler.models import SolverConfig, SolverConfigChange

# The stack, the browser, the demo cluster and the quiet teardown are the browser module's
# fixtures: `as` marks them re-exported, for pytest to find by name.
from .browser import (
    WAIT_MS,
    chromium as chromium,
    demo as demo,
    off_the_loop,
    quiet_database as quiet_database,
    signed_in,
    stack as stack,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres_tier]


def store(**values):
    """Settings stored before the page opens (as if applied earlier, no audit row)."""
    SolverConfig.objects.filter(pk=SolverConfig.load().pk).update(**values)


def tradeoff_page(chromium, base, username):
    """The Trade-off page with the live layer connected; `page.sent` collects the JSON bodies
    of its preview and apply requests."""
    page = signed_in(chromium, base, username)
    page.sent = []

    def record(request):
        action = request.url.rstrip("/").rsplit("/", 1)[-1]
        if request.method == "POST" and action in ("preview", "apply"):
            page.sent.append((action, json.loads(request.post_data)))

    page.on("request", record)
    page.goto(base + "/dashboard/tradeoff/")
    page.wait_for_selector("#live-status[data-status=live]", timeout=WAIT_MS)
    return page


def audited(user):
    return [(c.field, c.new_value) for c in SolverConfigChange.objects.filter(changed_by=user).order_by("pk")]


@pytest.mark.parametrize("weight", [7.0, 0.33])
def test_apply_sends_only_the_edited_field_and_keeps_a_weight_the_slider_cannot_show(stack, chromium, demo, weight):
    base, _ = stack
    store(base_energy_weight=weight)
    page = tradeoff_page(chromium, base, "operator")
    assert float(page.input_value("#weight")) == weight  # the exact stored weight, not the slider's clamp or step
    page.fill("#surplus", "50")
    page.click("#apply")
    page.wait_for_selector("#tradeoff-message.ok", timeout=WAIT_MS)
    assert page.sent == [("apply", {"throughput_value_w": 50})]
    assert audited(demo["operator"]) == [("throughput_value_w", "50.0")]
    assert SolverConfig.load().base_energy_weight == weight
    # a weight beyond the slider's range, typed exactly
    page.fill("#weight", "12.5")
    with page.expect_response(lambda response: "/apply/" in response.url, timeout=WAIT_MS):
        page.click("#apply")
    assert page.sent[1:] == [("apply", {"base_energy_weight": 12.5})]
    assert SolverConfig.load().base_energy_weight == 12.5
    # the slider writes its value into the exact field
    page.fill("#weight-slider", "0.5")
    assert page.input_value("#weight") == "0.5"
    assert page.errors == []


def test_an_empty_or_invalid_number_is_a_field_error_and_nothing_is_sent(stack, chromium, demo):
    base, _ = stack
    store(throughput_value_w=80.0)
    page = tradeoff_page(chromium, base, "operator")
    page.fill("#surplus", "")
    for button in ("#apply", "#preview"):
        page.click(button)
        assert page.is_visible("#surplus-error") and page.inner_text("#surplus-error")
        assert "error" in page.get_attribute("#tradeoff-message", "class")
    # letters leave a number input empty (badInput): the same
    page.fill("#surplus", "")
    page.focus("#surplus")
    page.keyboard.type("e")
    page.click("#apply")
    assert page.is_visible("#surplus-error")
    page.fill("#load-window", "0")  # below its minimum: refused beside it too
    page.click("#apply")
    assert page.is_visible("#load-window-error")
    page.wait_for_timeout(500)
    assert page.sent == [] and not SolverConfigChange.objects.exists()
    assert SolverConfig.load().throughput_value_w == 80.0
    # corrected, the errors go and only the edited fields are sent
    page.fill("#surplus", "25")
    page.fill("#load-window", "9")
    assert not page.is_visible("#surplus-error") and not page.is_visible("#load-window-error")
    page.click("#apply")
    page.wait_for_selector("#tradeoff-message.ok", timeout=WAIT_MS)
    assert page.sent == [("apply", {"load_window": 9, "throughput_value_w": 25})]
    assert page.errors == []


def test_settings_applied_elsewhere_reach_the_open_form(stack, chromium, demo, make_user):
    base, _ = stack
    page = tradeoff_page(chromium, base, "operator")
    page.fill("#load-window", "9")  # being edited here
    other = make_user("other-operator", tenant="ops", staff=True)
    off_the_loop(lambda: tradeoff_apply(by=other, values={"throughput_value_w": 200.0, "load_window": 30,
                                                          "base_energy_weight": 6.0}))
    # the fields not edited here follow; the edited one keeps the user's value and says it changed
    page.wait_for_function("() => document.getElementById('surplus').value === '200'", timeout=WAIT_MS)
    assert page.input_value("#weight") == "6"
    assert page.input_value("#load-window") == "9"
    assert page.is_visible("#load-window-note") and "30" in page.inner_text("#load-window-note")
    assert not page.is_visible("#surplus-note")
    # apply sends the user's edit alone, not the values they saw before the change
    page.click("#apply")
    page.wait_for_selector("#tradeoff-message.ok", timeout=WAIT_MS)
    assert page.sent == [("apply", {"load_window": 9})]
    config = SolverConfig.load()
    assert (config.load_window, config.throughput_value_w, config.base_energy_weight) == (9, 200.0, 6.0)
    assert not page.is_visible("#load-window-note")
    assert page.errors == []


def test_power_and_utilization_bars_of_a_gpu_do_not_overlap(stack, chromium, demo):
    base, _ = stack
    page = signed_in(chromium, base, "alice")
    page.goto(base + "/dashboard/")
    page.wait_for_selector("#live-status[data-status=live]", timeout=WAIT_MS)
    boxes = "() => Array.from(document.querySelectorAll('#gpu-plot .barlayer .trace')).map(t => Array.from("
    boxes += "t.querySelectorAll('.point path')).map(p => { const r = p.getBoundingClientRect();"
    boxes += " return [t.__data__[0].trace.name, r.left, r.right, r.top, r.bottom]; }))"
    page.wait_for_function(f"() => ({boxes})().flat().length === 4", timeout=WAIT_MS)
    bars = {}
    for trace in page.evaluate(boxes):
        for i, (name, left, right, top, bottom) in enumerate(trace):
            bars.setdefault(i, {})[name] = (left, right, top, bottom)
    assert len(bars) == 2  # the demo's two GPUs: 60 W at 10 %, 210 W at 90 %
    for gpu in bars.values():
        power, utilization = gpu["power (W)"], gpu["utilization"]
        assert power[1] > power[0] and utilization[1] > utilization[0] and power[3] > power[2]
        assert power[1] <= utilization[0] + 0.5 or utilization[1] <= power[0] + 0.5, gpu
    assert page.errors == []
