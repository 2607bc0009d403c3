"""Tenants' decayed usage and fair-share factors (docs/accounting.md), written by the
accounting pass: stored usage decays from when it was last written to now, the pass's
increments (already decayed from when they were drawn) are added, and every tenant's factor is
recomputed from weighted GPU-hours and its shares, lowered while it is over its energy budget
this month."""
from datetime import UTC

from ..models import Tenant, TenantUsage
from ..optimizer.fair_share import budget_shares, decayed, factors
from ..tenancy.selectors import energy_this_month


def usage_locked(now) -> dict[int, TenantUsage]:
    """Every tenant's usage row, created where missing, locked (in id order) until the
    transaction ends: {tenant id: row}."""
    have = set(TenantUsage.objects.values_list("tenant_id", flat=True))
    missing = [TenantUsage(tenant_id=pk, updated_at=now) for pk in Tenant.objects.values_list("pk", flat=True)
               if pk not in have]
    TenantUsage.objects.bulk_create(missing, ignore_conflicts=True)
    return {row.tenant_id: row for row in TenantUsage.objects.select_for_update().order_by("pk")}


def usage_update(usage: dict[int, TenantUsage], increments: dict, *, now, half_life_s: float) -> None:
    """Decay, add `increments` ({tenant id: [weighted GPU-hours, kWh]}), refactor, write."""
    for tenant_id, row in usage.items():
        elapsed = (now - row.updated_at).total_seconds()
        units, kwh = increments.get(tenant_id, (0.0, 0.0))
        row.gpu_hours = decayed(row.gpu_hours, elapsed, half_life_s) + units
        row.energy_kwh = decayed(row.energy_kwh, elapsed, half_life_s) + kwh
        row.updated_at = now
    shares = tenant_shares(now)
    new = factors({pk: row.gpu_hours for pk, row in usage.items()}, {pk: shares.get(pk, 0.0) for pk in usage})
    for tenant_id, row in usage.items():
        row.factor = new[tenant_id]
    TenantUsage.objects.bulk_update(list(usage.values()), ["gpu_hours", "energy_kwh", "factor", "updated_at"])


def tenant_shares(now) -> dict[int, float]:
    """{tenant id: its shares for the factor}: as set, or lowered by its energy budget when it
    drew more than that this UTC month (fair_share.budget_shares)."""
    drawn = energy_this_month(now.astimezone(UTC).date())
    return {
        pk: budget_shares(float(shares), budget, drawn.get(pk) or 0.0)
        for pk, shares, budget in Tenant.objects.values_list("pk", "shares", "energy_budget_kwh_month")
    }
