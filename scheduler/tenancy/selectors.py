"""Reads of tenants: who sees which, what each holds now (GPUs in use and borrowed per type,
against its quotas), its fair-share standing and its energy bill. One dict per tenant
(`tenant_overviews`) serves the API, the Tenants page, its live events and /metrics alike."""
from collections import defaultdict
from datetime import UTC, date, datetime

from django.db.models import FloatField, Q, QuerySet, Sum, Value
from django.db.models.functions import Coalesce, TruncMonth
from django.utils import timezone

from telemetry.models import Gpu, GpuState

from ..lifecycle import JobState
from ..models import Allocation, Tenant, TenantEnergyDay, TenantQuota, TenantUsage
from ..selectors import tenant_of

#: Jobs that hold GPUs now: their open allocations are the tenant's GPUs in use.
HOLDING_STATES = (JobState.PLACED.value, JobState.RUNNING.value)
DAY, MONTH = "day", "month"


def tenants_visible_to(user) -> QuerySet[Tenant]:
    """Staff see every tenant; a member only its own; anyone else none."""
    if user.is_staff:
        return Tenant.objects.all()
    tenant = tenant_of(user)
    return Tenant.objects.filter(pk=tenant.pk) if tenant is not None else Tenant.objects.none()


def cluster_gpu_types() -> set[str]:
    """Names of the GPU types the cluster has: at least one GPU registered and not disabled or
    missing (the GPUs a job could ever be given). A quota on any other type could never be met."""
    gpus = Gpu.objects.exclude(state__in=[GpuState.DISABLED, GpuState.MISSING])
    return set(gpus.values_list("gpu_type__name", flat=True).distinct())


def gpus_in_use(tenant_ids) -> dict[int, dict[str, int]]:
    """{tenant id: {GPU type: GPUs its placed or running jobs hold now}}: a GPU two of its jobs
    share counts once for the tenant. One query."""
    held = (
        Allocation.objects.filter(end__isnull=True, job__state__in=HOLDING_STATES, job__tenant_id__in=list(tenant_ids))
        .values_list("job__tenant_id", "gpu_id", "gpu__gpu_type__name").distinct()
    )
    gpus = defaultdict(set)
    for tenant_id, gpu_id, gpu_type in held:
        gpus[(tenant_id, gpu_type)].add(gpu_id)
    in_use = defaultdict(dict)
    for (tenant_id, gpu_type), ids in sorted(gpus.items()):
        in_use[tenant_id][gpu_type] = len(ids)
    return dict(in_use)


def borrowed(in_use: dict[str, int], quotas: dict[str, int]) -> dict[str, int]:
    """GPUs held above the quota of their type (all of them where the tenant has no quota on it):
    idle quota of other tenants, reclaimed when its owner needs it."""
    over = {gpu_type: n - quotas.get(gpu_type, 0) for gpu_type, n in in_use.items()}
    return {gpu_type: n for gpu_type, n in over.items() if n > 0}


def month_start(day: date) -> date:
    return day.replace(day=1)


def energy_this_month(today: date, tenant_ids=None) -> dict[int, float]:
    """{tenant id: kWh its jobs drew from the first of `today`'s month (UTC) to `today`} for the
    tenants that drew any (all of them, or those of `tenant_ids`): what a budget is held to."""
    days = TenantEnergyDay.objects.filter(day__gte=month_start(today), day__lte=today)
    if tenant_ids is not None:
        days = days.filter(tenant_id__in=list(tenant_ids))
    return {pk: kwh or 0.0 for pk, kwh in days.values_list("tenant_id").annotate(kwh=Sum("energy_kwh")).order_by()}


def tenant_overviews(tenants, *, now: datetime | None = None) -> list[dict]:
    """For each tenant (in the given order): its settings, quotas, GPUs in use and borrowed per
    type, fair-share standing (the defaults of TenantUsage before the accounting wrote a row)
    and its energy this UTC day and month against its budget. A fixed number of queries."""
    tenants = list(tenants)
    ids = [t.pk for t in tenants]
    today = (now or timezone.now()).astimezone(UTC).date()
    quotas = defaultdict(dict)
    for tenant_id, gpu_type, gpus in TenantQuota.objects.filter(tenant_id__in=ids).order_by("gpu_type__name") \
            .values_list("tenant_id", "gpu_type__name", "gpus"):
        quotas[tenant_id][gpu_type] = gpus
    in_use = gpus_in_use(ids)
    usage = {u.tenant_id: u for u in TenantUsage.objects.filter(tenant_id__in=ids)}
    month = energy_this_month(today, ids)
    today_kwh = dict(
        TenantEnergyDay.objects.filter(tenant_id__in=ids, day=today).values_list("tenant_id", "energy_kwh")
    )
    return [
        _overview(t, quotas[t.pk], in_use.get(t.pk, {}), usage.get(t.pk), today_kwh.get(t.pk, 0.0),
                  month.get(t.pk) or 0.0)
        for t in tenants
    ]


def _overview(tenant, quotas, in_use, usage, today_kwh, month_kwh) -> dict:
    budget = tenant.energy_budget_kwh_month
    return {
        "slug": tenant.slug,
        "name": tenant.name,
        "shares": tenant.shares,
        "may_borrow": tenant.may_borrow,
        "energy_budget_kwh_month": budget,
        "quotas": [{"gpu_type": gpu_type, "gpus": gpus} for gpu_type, gpus in quotas.items()],
        "in_use": in_use,
        "borrowed": borrowed(in_use, quotas),
        "fair_share": {
            "factor": usage.factor if usage else 1.0,
            "gpu_hours": usage.gpu_hours if usage else 0.0,
            "energy_kwh": usage.energy_kwh if usage else 0.0,
            "updated_at": usage.updated_at.isoformat() if usage else None,
        },
        "energy": {
            "today_kwh": today_kwh,
            "month_kwh": month_kwh,
            "budget_left_kwh": None if budget is None else max(0.0, budget - month_kwh),
            "over_budget": budget is not None and month_kwh > budget,
        },
    }


def with_standing(tenants: QuerySet[Tenant], *, now: datetime | None = None) -> QuerySet[Tenant]:
    """The tenants, each annotated in the same query with its fair-share standing (`usage_factor`,
    `usage_gpu_hours`, `usage_energy_kwh`: TenantUsage's defaults without a row) and its energy
    `energy_today_kwh` and `energy_month_kwh` (UTC): the admin's columns, sortable."""
    today = (now or timezone.now()).astimezone(UTC).date()
    zero = Value(0.0, output_field=FloatField())
    days = Q(energy_days__day__gte=month_start(today), energy_days__day__lte=today)
    return tenants.annotate(
        usage_factor=Coalesce("usage__factor", Value(1.0, output_field=FloatField())),
        usage_gpu_hours=Coalesce("usage__gpu_hours", zero),
        usage_energy_kwh=Coalesce("usage__energy_kwh", zero),
        energy_today_kwh=Coalesce(Sum("energy_days__energy_kwh", filter=Q(energy_days__day=today)), zero),
        energy_month_kwh=Coalesce(Sum("energy_days__energy_kwh", filter=days), zero),
    )


def energy_bill(tenant, *, start: date, end: date, by: str) -> list[dict]:
    """The tenant's energy and GPU-hours from `start` to `end` (UTC days, both included), per day
    or per calendar month, oldest first; days without a row are left out."""
    days = TenantEnergyDay.objects.filter(tenant=tenant, day__gte=start, day__lte=end)
    if by == DAY:
        rows = days.order_by("day").values_list("day", "energy_kwh", "gpu_hours")
        return [{"period": day.isoformat(), "energy_kwh": kwh, "gpu_hours": hours} for day, kwh, hours in rows]
    rows = (days.annotate(month=TruncMonth("day")).values_list("month")
            .annotate(kwh=Sum("energy_kwh"), hours=Sum("gpu_hours")).order_by("month"))
    return [{"period": month.strftime("%Y-%m"), "energy_kwh": kwh, "gpu_hours": hours} for month, kwh, hours in rows]


def energy_per_day(tenant_ids, *, start: date) -> dict[int, list[dict]]:
    """{tenant id: [{day, energy_kwh}]} from `start` on, oldest first (the Tenants page's chart)."""
    series = defaultdict(list)
    rows = TenantEnergyDay.objects.filter(tenant_id__in=list(tenant_ids), day__gte=start).order_by("day")
    for tenant_id, day, kwh in rows.values_list("tenant_id", "day", "energy_kwh"):
        series[tenant_id].append({"day": day.isoformat(), "energy_kwh": kwh})
    return dict(series)
