"""The live kind `tenant`: a member sees its own tenant, staff all, in the snapshot and in the
events that an admin's change (or the accounting's tenants_changed) sends after its commit."""
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from gogh_web.events.models import Event
from gogh_web.events.selectors import events_after, snapshot, viewer_for
from scheduler.models import TenantEnergyDay
from scheduler.tenancy.live import CHART_DAYS, tenants_changed
from scheduler.tenancy.services import tenant_quotas_replace, tenant_update


@pytest.fixture
def committed(django_capture_on_commit_callbacks):
    return lambda: django_capture_on_commit_callbacks(execute=True)


def test_snapshot_scoped_like_the_api(accounted, alice, bob, staff, make_user, research):
    assert [t["slug"] for t in snapshot(viewer_for(alice))["state"]["tenant"].values()] == ["research"]
    assert {t["slug"] for t in snapshot(viewer_for(staff))["state"]["tenant"].values()} == {"research", "vision", "ops"}
    assert snapshot(viewer_for(make_user("nobody")))["state"]["tenant"] == {}
    shown = snapshot(viewer_for(alice))["state"]["tenant"][str(research.pk)]
    assert shown["shares"] == 1 and shown["fair_share"]["factor"] == 0.25
    assert shown["quotas"] == [{"gpu_type": "v100", "gpus": 2}]
    assert "in_use" not in shown  # the page works it out from the jobs it follows


def test_energy_days_cover_the_chart_window_only(accounted, alice, research):
    today = timezone.now().date()
    TenantEnergyDay.objects.create(tenant=research, day=today - timedelta(days=CHART_DAYS - 1), energy_kwh=0.5)
    days = snapshot(viewer_for(alice))["state"]["tenant"][str(research.pk)]["energy_days"]
    assert days == [{"day": (today - timedelta(days=CHART_DAYS - 1)).isoformat(), "energy_kwh": 0.5},
                    {"day": today.isoformat(), "energy_kwh": 2.0}]  # the one 40 days ago left out


def test_a_change_is_an_event_for_the_tenant_and_staff_only(accounted, alice, bob, staff, research, v100, committed):
    after = Event.objects.order_by("-id").values_list("id", flat=True).first() or 0
    with committed():
        tenant_update(tenant=research, values={"shares": 4})
        tenant_quotas_replace(tenant=research, quotas={v100: 3})
    seen = events_after(viewer_for(alice), after, limit=100)
    assert [(e["kind"], e["data"]["shares"]) for e in seen] == [("tenant", 4), ("tenant", 4)]
    assert seen[-1]["data"]["quotas"] == [{"gpu_type": "v100", "gpus": 3}]
    assert events_after(viewer_for(bob), after, limit=100) == []
    assert len(events_after(viewer_for(staff), after, limit=100)) == 2


def test_a_rolled_back_change_sends_nothing(accounted, research, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True), pytest.raises(ValidationError):
        tenant_update(tenant=research, values={"shares": 0})
    research.refresh_from_db()
    assert research.shares == 1 and not Event.objects.filter(kind="tenant").exists()


def test_tenants_changed_sends_what_the_accounting_wrote(accounted, alice, research, committed):
    with committed():
        TenantEnergyDay.objects.filter(tenant=research, day=timezone.now().date()).update(energy_kwh=6.5)
        tenants_changed([research.pk, research.pk])
    event = Event.objects.get(kind="tenant")
    assert event.tenant_id == research.pk and event.data["energy"]["today_kwh"] == 6.5
