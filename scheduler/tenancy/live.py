"""The live kind `tenant` (docs/live-updates.md): a tenant's overview (selectors.tenant_overviews)
and its energy per day over the last CHART_DAYS days, seen by its members and staff. Sent when
an admin changes its settings or quotas (services.py) and when the accounting writes its usage
or energy: that code calls `tenants_changed` inside its transaction.

The GPUs a tenant holds now are left out: they change with every placement, and the page works
them out from the `job` and `gpu` kinds it already follows (static/js/dashboard/tenants.js), so
a round sends no tenant events and the state a page replays stays the snapshot's."""
from datetime import timedelta

from django.utils import timezone

from gogh_web.events.sending import send_events

from ..models import Tenant
from . import selectors

#: Days of energy the Tenants page charts.
CHART_DAYS = 30
#: Parts of an overview that follow the jobs' placements, not the tenant's own rows.
PLACEMENT_PARTS = ("in_use", "borrowed")


def tenants_data(tenants) -> dict[str, dict]:
    """{tenant id: its overview with `energy_days`, its energy per day since CHART_DAYS - 1 days ago}."""
    tenants = list(tenants)
    today = timezone.now().date()
    series = selectors.energy_per_day([t.pk for t in tenants], start=today - timedelta(days=CHART_DAYS - 1))
    return {
        str(t.pk): {**_without_placements(overview), "energy_days": series.get(t.pk, [])}
        for t, overview in zip(tenants, selectors.tenant_overviews(tenants), strict=True)
    }


def _without_placements(overview: dict) -> dict:
    return {key: value for key, value in overview.items() if key not in PLACEMENT_PARTS}


def tenants_data_by_key(keys: list[str]) -> dict[str, dict]:
    """What the events of these tenants carry; a tenant gone is left out (a delete)."""
    return tenants_data(Tenant.objects.filter(pk__in=[int(key) for key in keys]).order_by("pk"))


def tenants_snapshot(viewer) -> dict[str, dict]:
    """The snapshot's part: staff every tenant, a member its own, anyone else none."""
    tenants = Tenant.objects.order_by("pk")
    if not viewer.staff:
        tenants = tenants.filter(pk=viewer.tenant_id) if viewer.tenant_id else tenants.none()
    return tenants_data(tenants)


def tenants_changed(tenant_ids) -> None:
    """Tenants whose settings, quotas, usage, energy or GPUs in use changed: one batch of events,
    each seen by its tenant's members and staff, built after the commit from the committed rows.
    For the accounting (scheduler/accounting/) to call after it writes TenantUsage or
    TenantEnergyDay, inside its transaction."""
    ids = sorted(set(tenant_ids))
    send_events(kind="tenant", keys=ids, data=tenants_data_by_key, tenant_id={str(i): i for i in ids})
