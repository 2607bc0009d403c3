"""The Services page in a browser, on the live stack: staff see every active service with its
traffic, P99 against its bound (marked under or over), replicas target and live, the GPU of its
replica and its training partner, and a chart of its request rate and P99 against the bound; a
member sees only its tenant's; a replica's traffic report reaches the open page, table and
chart, without a reload. Screenshot: console-services-<user>.png."""
from datetime import timedelta

import pytest
from django.utils import timezone

from scheduler.models import Allocation, Job, Service, ServiceTraffic
from scheduler.serving.traffic import service_traffic_record
from telemetry.models import Gpu

from .browser import (
    WAIT_MS,
    chromium as chromium,
    demo as demo,
    off_the_loop,
    quiet_database as quiet_database,
    signed_in,
    stack as stack,
)

# The stack, the browser, the demo cluster and the quiet teardown are the browser module's
# fixtures: `as` marks them re-exported, for pytest to find by name.
from .conftest import ARTIFACTS

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres_tier]
PATH = "/dashboard/services/"


@pytest.fixture
def served(demo, make_user, resnet50):
    """research's `ranker` (P99 <= 50 ms) with one replica running on the first V100 beside a
    training job, reporting 40 requests/s at a P99 of 30 ms over the last half hour; vision's
    `detector`, which alice must not see."""
    alice, now = demo["alice"], timezone.now()
    research = alice.membership.tenant
    ranker = Service.objects.create(name="ranker", owner=alice, tenant=research, workload=resnet50,
                                    latency_bound_ms=50, batch_size=8, max_replicas=3, replicas_target=1,
                                    request_rate_rps=40.0, p99_ms=30.0, replica_min_throughput=6.5)
    replica, training = (
        Job.objects.create(owner=alice, tenant=research, workload=resnet50, min_throughput=1, max_gpus=1,
                           service=service, state="running", placed_at=now, started_at=now)
        for service in (ranker, None)
    )
    gpu = Gpu.objects.order_by("index").first()
    for job, partner in ((replica, training), (training, replica)):
        Allocation.objects.create(job=job, gpu=gpu, start=now).partners.set([partner])
    ServiceTraffic.objects.bulk_create([
        ServiceTraffic(service=ranker, job=replica, at=now - timedelta(minutes=m), request_rate_rps=40.0, p99_ms=30.0)
        for m in range(1, 31, 3)
    ])
    bob = make_user("bob", tenant="vision")
    Service.objects.create(name="detector", owner=bob, tenant=bob.membership.tenant, workload=resnet50,
                           latency_bound_ms=20)
    return {"ranker": ranker, "replica": replica, "training": training}


def open_services(chromium, base, username):
    page = signed_in(chromium, base, username)
    page.goto(base + PATH)
    page.wait_for_selector("#live-status[data-status=live]", timeout=WAIT_MS)
    return page


def cell(page, service, part):
    return page.inner_text(f'#services-table tr[data-service="{service.pk}"] td.{part}')


def plotted(page, service):
    """The chart's traces as the browser holds them: name -> y values."""
    return page.evaluate(f"""() => Object.fromEntries(
        (document.getElementById('service-plot-{service.pk}').data || []).map(t => [t.name, Array.from(t.y)]))""")


def test_staff_see_every_service_with_latency_replicas_partners_and_chart(stack, chromium, served):
    base, _ = stack
    ranker = served["ranker"]
    page = open_services(chromium, base, "operator")
    names = page.eval_on_selector_all("#services-table td.name", "cells => cells.map(c => c.innerText)")
    assert sorted(name.split()[0] for name in names) == ["detector", "ranker"]
    assert cell(page, ranker, "p99") == "30.0 / 50.0 ms under"
    assert cell(page, ranker, "traffic").startswith("40.0")
    assert cell(page, ranker, "replicas") == "1 / 1 (1-3)"
    assert "v100 on gpu-a" in cell(page, ranker, "placement")
    assert cell(page, ranker, "partners") == f"job {served['training'].pk} ResNet-50 (batch size 64) (training)"
    page.wait_for_function(f"(document.getElementById('service-plot-{ranker.pk}').data || []).length === 3",
                           timeout=WAIT_MS)
    traces = plotted(page, ranker)
    assert set(traces) == {"requests/s", "P99 ms", "bound ms"} and traces["bound ms"] == [50, 50]
    assert traces["requests/s"] and all(rate == 40 for rate in traces["requests/s"])
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "console-services-operator.png"), full_page=True)
    assert page.errors == []


def test_a_traffic_report_shows_without_a_reload(stack, chromium, served):
    base, _ = stack
    ranker = served["ranker"]
    page = open_services(chromium, base, "alice")
    assert page.eval_on_selector_all("#services-table tr[data-service]", "rows => rows.length") == 1  # not vision's
    page.evaluate("window.__notReloaded = true")
    off_the_loop(lambda: service_traffic_record(job=Job.objects.get(pk=served["replica"].pk), request_rate_rps=95.0,
                                                p99_ms=64.0))
    page.wait_for_function(
        f"""() => document.querySelector('#services-table tr[data-service="{ranker.pk}"] td.p99')
                     .innerText === "64.0 / 50.0 ms over" """, timeout=WAIT_MS)
    assert page.query_selector(f'#services-table tr[data-service="{ranker.pk}"] td.p99 .slo-violated') is not None
    page.wait_for_function(
        f"""() => {{ const t = (document.getElementById('service-plot-{ranker.pk}').data || [])[1];
                     return t && Array.from(t.y).includes(64); }}""", timeout=WAIT_MS)
    assert cell(page, ranker, "traffic").startswith("95.0")
    assert page.evaluate("window.__notReloaded") is True
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "console-services-alice.png"), full_page=True)
    assert page.errors == []
