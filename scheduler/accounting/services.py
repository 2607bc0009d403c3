"""The accounting pass (docs/accounting.md): each allocation's share of its GPU's measured power
and time since it was last counted, into its job's energy, its tenant's day and its tenant's
decayed usage, then every tenant's fair-share factor. Run by Celery beat every
GOGH_ACCOUNTING_EVERY_S.

Counting twice is impossible: a pass is one transaction that first locks every tenant's usage
row, so passes run one after the other, and each reads where the one before stopped
(Allocation.energy_counted_until) only once it holds the locks."""
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Case, F, FloatField, Q, Value, When
from django.utils import timezone

from telemetry.models import GpuSample, GpuSampleMinute

from ..models import Allocation, Job, SolverConfig, TenantEnergyDay
from ..optimizer.fair_share import decayed, gpu_hour_weight
from ..tenancy.live import tenants_changed
from .energy import RAW_HOLD_S, PowerTrace, allocation_pieces, gpu_readings
from .usage import usage_locked, usage_update

#: The most of an allocation's time one pass counts: a pass after an outage catches up this
#: much per allocation (ten times real time at the default interval), so that its reads stay
#: bounded (ten minutes of 1 Hz samples per GPU) and it holds the maintenance worker, which also
#: detects silent nodes, for seconds (an hour per pass over 1,000 allocations took 90 s).
MAX_SPAN_S = 600.0
#: A factor that moved less than this is not news for the Tenants page (it shows three decimals).
FACTOR_SHOWN = 5e-4
BATCH = 500
J_PER_KWH = 3.6e6


@dataclass
class Window:
    """One allocation's span to count in this pass, in POSIX seconds."""

    pk: int
    job_id: int
    tenant_id: int
    gpu_id: int
    weight: float  # usage units per GPU-hour of its GPU's type
    start: float
    end: float


@dataclass
class Increments:
    """What a pass adds: per job kWh; per (tenant, UTC day) [kWh, weighted GPU-hours]; per tenant
    [weighted GPU-hours, kWh] decayed to now (the order of TenantUsage's fields)."""

    job_kwh: dict = field(default_factory=lambda: defaultdict(float))
    day: dict = field(default_factory=lambda: defaultdict(lambda: [0.0, 0.0]))
    usage: dict = field(default_factory=lambda: defaultdict(lambda: [0.0, 0.0]))


@dataclass(frozen=True)
class AccountingPass:
    allocations: int
    energy_kwh: float
    gpu_hours: float  # weighted


def accounting_pass(*, now=None, settle_s: float | None = None, max_span_s: float = MAX_SPAN_S) -> AccountingPass:
    """Count every allocation up to min(its end, now - settle_s) (samples arrive in batches,
    GOGH_ACCOUNTING_SETTLE_S covers their delay), at most `max_span_s` of it, and refresh every
    tenant's usage and factor."""
    now = now or timezone.now()
    settle_s = settings.GOGH_ACCOUNTING_SETTLE_S if settle_s is None else settle_s
    with transaction.atomic():
        usage = usage_locked(now)  # first: this serialises passes
        half_life_s = SolverConfig.load().fair_share_half_life_h * 3600
        windows, done = _windows((now - timedelta(seconds=settle_s)).timestamp(), max_span_s)
        inc = _count(windows, now.timestamp(), half_life_s)
        _write(windows, done, inc)
        factors_before = {pk: row.factor for pk, row in usage.items()}
        usage_update(usage, inc.usage, now=now, half_life_s=half_life_s)
        moved = {pk for pk, row in usage.items() if abs(row.factor - factors_before[pk]) > FACTOR_SHOWN}
        changed = set(inc.usage) | moved
        if changed:
            tenants_changed(changed)
    return AccountingPass(
        allocations=len(windows), energy_kwh=sum(inc.job_kwh.values()),
        gpu_hours=sum(units for _, units in inc.day.values()),
    )


def _windows(upto: float, max_span_s: float) -> tuple[list[Window], list[int]]:
    """The allocations with time left to count before `upto`, and the ids of those with none
    left ever (closed, nothing between their counted point and their end: marked done)."""
    rows = (
        Allocation.objects.filter(start__lt=_at(upto))
        .filter(Q(end__isnull=True) | Q(energy_counted_until__isnull=True) | Q(energy_counted_until__lt=F("end")))
        .exclude(energy_counted_until__gte=_at(upto))
        .values_list("pk", "job_id", "job__tenant_id", "gpu_id", "gpu__gpu_type__tdp_w", "start", "end",
                     "energy_counted_until")
        .order_by("pk")
    )
    windows, done = [], []
    for pk, job_id, tenant_id, gpu_id, tdp_w, start, end, counted in rows:
        begin = (counted or start).timestamp()
        stop = min(end.timestamp() if end else upto, upto, begin + max_span_s)
        if stop > begin:
            windows.append(Window(pk, job_id, tenant_id, gpu_id, gpu_hour_weight(tdp_w), begin, stop))
        elif end is not None:
            done.append(pk)
    return windows, done


def _count(windows: list[Window], now: float, half_life_s: float) -> Increments:
    inc = Increments()
    traces = _traces(windows)
    occupancy = _occupancy(windows)
    for w in windows:
        for piece in allocation_pieces(w.start, w.end, traces[w.gpu_id], occupancy[w.gpu_id]):
            kwh, units = piece.joules / J_PER_KWH, piece.gpu_s / 3600 * w.weight
            inc.job_kwh[w.job_id] += kwh
            day = inc.day[(w.tenant_id, piece.day)]
            day[0] += kwh
            day[1] += units
            usage = inc.usage[w.tenant_id]
            usage[0] += decayed(units, now - piece.until, half_life_s)
            usage[1] += decayed(kwh, now - piece.until, half_life_s)
    return inc


def _traces(windows: list[Window]) -> dict[int, PowerTrace]:
    """Each GPU's power over its windows: one read of raw samples and one of minute aggregates
    per group of GPUs counted from the same instant (in a steady pass, all of them)."""
    spans: dict[int, list[float]] = {}
    for w in windows:
        lo, hi = spans.get(w.gpu_id, (w.start, w.end))
        spans[w.gpu_id] = [min(lo, w.start), max(hi, w.end)]
    groups: dict[tuple[float, float], list[int]] = defaultdict(list)
    for gpu_id, (lo, hi) in spans.items():
        groups[(lo, hi)].append(gpu_id)
    raw, minutes = defaultdict(list), defaultdict(list)
    for (lo, hi), gpu_ids in groups.items():
        for chunk in _chunks(gpu_ids):
            for gpu_id, ts, power in GpuSample.objects.filter(
                gpu_id__in=chunk, ts__gte=_at(lo - RAW_HOLD_S), ts__lt=_at(hi)
            ).values_list("gpu_id", "ts", "power_w").order_by():
                raw[gpu_id].append((ts.timestamp(), power))
            for gpu_id, minute, power in GpuSampleMinute.objects.filter(
                gpu_id__in=chunk, minute__gt=_at(lo - 60), minute__lt=_at(hi)
            ).values_list("gpu_id", "minute", "power_w_mean").order_by():
                minutes[gpu_id].append((minute.timestamp(), power))
    return {gpu_id: PowerTrace(gpu_readings(raw[gpu_id], minutes[gpu_id])) for gpu_id in spans}


def _occupancy(windows: list[Window]) -> dict[int, list[tuple[float, float]]]:
    """Each GPU's allocations over its windows (counted or not), as (start, end) spans."""
    spans = defaultdict(list)
    if not windows:
        return spans
    lo, hi = min(w.start for w in windows), max(w.end for w in windows)
    gpu_ids = list({w.gpu_id for w in windows})
    for chunk in _chunks(gpu_ids):
        for gpu_id, start, end in Allocation.objects.filter(
            Q(end__isnull=True) | Q(end__gt=_at(lo)), gpu_id__in=chunk, start__lt=_at(hi)
        ).values_list("gpu_id", "start", "end"):
            spans[gpu_id].append((start.timestamp(), end.timestamp() if end else float("inf")))
    return spans


def _write(windows: list[Window], done: list[int], inc: Increments) -> None:
    """Jobs first, then allocations (the order a round writes them: no lock cycle with one),
    then the tenants' days."""
    job_ids = sorted(inc.job_kwh)
    for chunk in _chunks(job_ids):
        Job.objects.filter(pk__in=chunk).update(energy_kwh=F("energy_kwh") + Case(
            *[When(pk=pk, then=Value(inc.job_kwh[pk])) for pk in chunk], output_field=FloatField()
        ))
    by_end = defaultdict(list)  # one UPDATE per instant counted to: in a steady pass, all of them
    for w in windows:
        by_end[w.end].append(w.pk)
    for end, pks in by_end.items():
        for chunk in _chunks(pks):
            Allocation.objects.filter(pk__in=chunk).update(energy_counted_until=_at(end))
    for chunk in _chunks(done):
        Allocation.objects.filter(pk__in=chunk).update(energy_counted_until=F("end"))
    _days_add(inc.day)


def _days_add(days: dict) -> None:
    if not days:
        return
    existing = {
        (row.tenant_id, row.day): row
        for row in TenantEnergyDay.objects.select_for_update().filter(
            tenant_id__in={t for t, _ in days}, day__in={d for _, d in days}
        )
    }
    new = []
    for key, (kwh, units) in days.items():
        row = existing.get(key)
        if row is None:
            new.append(TenantEnergyDay(tenant_id=key[0], day=key[1], energy_kwh=kwh, gpu_hours=units))
        else:
            row.energy_kwh += kwh
            row.gpu_hours += units
    TenantEnergyDay.objects.bulk_create(new, batch_size=BATCH)
    TenantEnergyDay.objects.bulk_update(list(existing.values()), ["energy_kwh", "gpu_hours"], batch_size=BATCH)


def _chunks(items: list) -> list[list]:
    return [items[i:i + BATCH] for i in range(0, len(items), BATCH)]


def _at(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, tz=UTC)
