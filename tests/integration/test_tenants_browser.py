"""The Tenants page in a browser, on the live stack: staff see every tenant with its quota, the
GPUs its jobs hold and those borrowed above the quota, its energy against its budget and the
energy chart; a member sees only its own tenant; a change of shares through the API reaches the
open page without a reload. Screenshot: console-tenants-<user>.png."""
import json
import urllib.request

import pytest
from django.contrib.auth.hashers import PBKDF2PasswordHasher
from django.utils import timezone
from rest_framework.authtoken.models import Token

from scheduler.models import Allocation, Job, Tenant, TenantEnergyDay, TenantQuota, TenantUsage
from telemetry.models import Gpu

from .browser import (
    WAIT_MS,
    chromium as chromium,
    demo as demo,
    quiet_database as quiet_database,
    signed_in,
    stack as stack,
)

# The stack, the browser, the demo cluster and the quiet teardown are the browser module's
# fixtures: `as` marks them re-exported, for pytest to find by name.
from .conftest import ARTIFACTS

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres_tier]
PATH = "/dashboard/tenants/"


@pytest.fixture
def tenants(demo, make_user, resnet50):
    """research (alice) holds both V100s on a quota of one (one borrowed), used 2.5 kWh today
    against a budget of 2; vision (bob) has a quota of one V100 and a day of energy."""
    bob = make_user("bob", tenant="vision")
    bob.password = PBKDF2PasswordHasher().encode("pw-bob", "dashboardsalt", iterations=1000)
    bob.save()
    research, vision = Tenant.objects.get(slug="research"), Tenant.objects.get(slug="vision")
    Tenant.objects.filter(pk=research.pk).update(energy_budget_kwh_month=2.0)
    v100 = Gpu.objects.first().gpu_type
    TenantQuota.objects.create(tenant=research, gpu_type=v100, gpus=1)
    TenantQuota.objects.create(tenant=vision, gpu_type=v100, gpus=1)
    TenantUsage.objects.create(tenant=research, gpu_hours=12.0, energy_kwh=3.0, factor=0.375, updated_at=timezone.now())
    TenantEnergyDay.objects.create(tenant=research, day=timezone.now().date(), energy_kwh=2.5, gpu_hours=6.0)
    TenantEnergyDay.objects.create(tenant=vision, day=timezone.now().date(), energy_kwh=0.75, gpu_hours=1.0)
    job = Job.objects.create(workload=resnet50, tenant=research, owner=demo["alice"], min_throughput=1.0,
                             max_gpus=2, state="running", placed_at=timezone.now(), started_at=timezone.now())
    for gpu in Gpu.objects.all():
        Allocation.objects.create(job=job, gpu=gpu, start=timezone.now())
    return {**demo, "bob": bob}


def open_tenants(chromium, base, username):
    page = signed_in(chromium, base, username)
    page.goto(base + PATH)
    page.wait_for_selector("#live-status[data-status=live]", timeout=WAIT_MS)
    return page


def cell(page, slug, part):
    return page.inner_text(f'#tenants-table tr[data-tenant="{slug}"] td.{part}')


def test_staff_see_every_tenant_with_quota_use_borrowing_and_energy(stack, chromium, tenants):
    base, _ = stack
    page = open_tenants(chromium, base, "operator")
    page.wait_for_function("(document.getElementById('energy-plot').data || []).length === 3", timeout=WAIT_MS)
    assert page.evaluate("document.querySelectorAll('#energy-plot .trace.bars').length") == 3
    slugs = page.eval_on_selector_all("#tenants-table tr[data-tenant]", "rows => rows.map(r => r.dataset.tenant)")
    assert sorted(slugs) == ["ops", "research", "vision"]
    assert cell(page, "research", "quota") == "v100 1"
    assert cell(page, "research", "in-use") == "v100 2"  # drawn by the script from the live jobs and GPUs
    assert cell(page, "research", "borrowed") == "v100 1"
    assert cell(page, "research", "factor") == "0.375"
    assert cell(page, "research", "today") == "2.50 kWh"
    assert "2.50 / 2.00 kWh" in cell(page, "research", "month") and "over budget" in cell(page, "research", "month")
    assert cell(page, "vision", "in-use") == "-" and cell(page, "vision", "today") == "0.75 kWh"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "console-tenants-operator.png"), full_page=True)
    assert page.errors == []


def test_a_member_sees_only_its_own_tenant(stack, chromium, tenants):
    base, _ = stack
    page = open_tenants(chromium, base, "bob")
    slugs = page.eval_on_selector_all("#tenants-table tr[data-tenant]", "rows => rows.map(r => r.dataset.tenant)")
    assert slugs == ["vision"]
    assert "research" not in page.inner_text("#tenants-table")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "console-tenants-bob.png"), full_page=True)
    assert page.errors == []


def test_a_change_of_shares_through_the_api_shows_without_a_reload(stack, chromium, tenants):
    base, _ = stack
    page = open_tenants(chromium, base, "alice")
    assert cell(page, "research", "shares") == "1"
    page.evaluate("window.__notReloaded = true")
    token = Token.objects.get_or_create(user=tenants["operator"])[0].key
    request = urllib.request.Request(base + "/api/tenants/research/", data=json.dumps({"shares": 5}).encode(),
                                     method="PATCH", headers={"Authorization": f"Token {token}",
                                                              "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200
    page.wait_for_function(
        """() => document.querySelector('#tenants-table tr[data-tenant="research"] td.shares').innerText === "5" """,
        timeout=WAIT_MS)
    assert page.evaluate("window.__notReloaded") is True
    assert page.errors == []
