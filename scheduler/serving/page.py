"""Reads behind the console's view of services (the Services page, the live kind `service` and
/metrics): who sees which service, each one's row (its plan, its traffic now, its replicas with
their GPUs and partners) and its traffic over the last CHART_HOURS, downsampled to at most
CHART_POINTS points so a row's size does not grow with how often its replicas report.

The points are fixed slots of the clock (multiples of the slot width since the epoch), not
counted back from now: a row built by an event and the same row built by a snapshot a second
later have the same points, which is what lets a page replay events onto a snapshot."""
from collections import defaultdict
from datetime import UTC, datetime, timedelta

from django.db.models import Avg, Max, QuerySet
from django.db.models.functions import TruncMinute
from django.utils import timezone

from gogh_web.events.state import iso, number

from ..lifecycle import TERMINAL, JobState
from ..models import Allocation, Job, Service, ServiceState, ServiceTraffic
from .selectors import services_visible_to

#: Hours of traffic a service's chart shows, and the most points it has.
CHART_HOURS = 6
CHART_POINTS = 120
SLOT_S = CHART_HOURS * 3600 // CHART_POINTS
TRAINING, SERVICE = "training", "service"
ENDED_STATES = [s.value for s in TERMINAL]


def active_services_visible_to(user) -> QuerySet[Service]:
    """The active services a user may see: staff every one, a member its tenant's, anyone else none."""
    return services_visible_to(user).filter(state=ServiceState.ACTIVE)


def over_bound(p99_ms: float | None, bound_ms: float) -> bool | None:
    """Whether the reported P99 breaks the SLO; None before any replica reported one."""
    return None if p99_ms is None else p99_ms > bound_ms


def replicas_of(service_ids) -> dict[int, list[dict]]:
    """{service id: its replicas that have not ended, by id: state, the GPUs they hold now and
    the jobs sharing those GPUs (training, or another service's replica)}. Three queries."""
    replicas = list(
        Job.objects.filter(service_id__in=list(service_ids)).exclude(state__in=ENDED_STATES)
        .order_by("pk").values_list("pk", "service_id", "state")
    )
    ids = [pk for pk, _, _ in replicas]
    gpus = defaultdict(list)
    open_allocations = Allocation.objects.filter(job_id__in=ids, end__isnull=True).order_by("gpu_id")
    for job_id, gpu_id, gpu_type, node in open_allocations.values_list(
        "job_id", "gpu_id", "gpu__gpu_type__name", "gpu__node__hostname"
    ):
        gpus[job_id].append({"gpu_id": gpu_id, "gpu_type": gpu_type, "node": node})
    partners = defaultdict(dict)
    links = Allocation.partners.through.objects.filter(allocation__job_id__in=ids, allocation__end__isnull=True)
    for job_id, partner_id, workload, partner_service in links.values_list(
        "allocation__job_id", "job_id", "job__workload__name", "job__service_id"
    ):
        partners[job_id][partner_id] = {
            "job_id": partner_id, "workload": workload, "kind": SERVICE if partner_service else TRAINING,
        }
    found = defaultdict(list)
    for pk, service_id, state in replicas:
        found[service_id].append({
            "job_id": pk, "state": state, "gpus": gpus.get(pk, []),
            "partners": [partners[pk][p] for p in sorted(partners.get(pk, {}))],
        })
    return found


def _slot(at: datetime) -> int:
    return int(at.timestamp()) // SLOT_S * SLOT_S


def traffic_of(service_ids, *, now: datetime | None = None) -> dict[int, list[dict]]:
    """{service id: its traffic per slot of SLOT_S seconds over the last CHART_HOURS, oldest
    first: `rate_rps` the sum over replicas of each one's mean rate in the slot (as the service's
    rate sums its replicas'), `p99_ms` the worst P99 reported in it}. One query, whose rows are
    per minute and replica however often replicas report."""
    now = now or timezone.now()
    start = datetime.fromtimestamp(_slot(now - timedelta(hours=CHART_HOURS)) + SLOT_S, tz=UTC)
    rows = (
        ServiceTraffic.objects.filter(service_id__in=list(service_ids), at__gte=start, at__lte=now)
        .annotate(minute=TruncMinute("at", tzinfo=UTC)).values_list("service_id", "minute", "job_id")
        .annotate(rate=Avg("request_rate_rps"), p99=Max("p99_ms")).order_by()
    )
    rates = defaultdict(lambda: defaultdict(list))  # (service, slot) -> replica -> minute means
    worst: dict[tuple[int, int], float | None] = {}
    for service_id, minute, job_id, rate, p99 in rows:
        key = (service_id, _slot(minute))
        rates[key][job_id].append(rate)
        if p99 is not None:
            worst[key] = max(p99, worst.get(key) or p99)
    series = defaultdict(list)
    for service_id, slot in sorted(rates):
        replicas = rates[(service_id, slot)]
        series[service_id].append({
            "at": iso(datetime.fromtimestamp(slot, tz=UTC)),
            "rate_rps": number(sum(sum(means) / len(means) for means in replicas.values())),
            "p99_ms": number(worst.get((service_id, slot))),
        })
    return series


def service_rows(services, *, now: datetime | None = None) -> list[dict]:
    """For each service (in the given order, workload, tenant and owner loaded or not): its
    settings, the plan the last round made, its traffic now against its bound, its replicas and
    its traffic series. `partners`: the jobs sharing any replica's GPU, once each. A fixed number of
    queries however many services."""
    services = list(services)
    ids = [s.pk for s in services]
    replicas, traffic = replicas_of(ids), traffic_of(ids, now=now)
    return [service_row(s, replicas=replicas.get(s.pk, []), traffic=traffic.get(s.pk, [])) for s in services]


def service_row(service: Service, *, replicas: list[dict], traffic: list[dict]) -> dict:
    rate, p99 = number(service.request_rate_rps), number(service.p99_ms)
    partners = {p["job_id"]: p for r in replicas for p in r["partners"]}
    return {
        "id": service.pk,
        "name": service.name,
        "workload": service.workload.name,
        "tenant": service.tenant.slug,
        "owner": service.owner.get_username(),
        "state": service.state,
        "latency_bound_ms": number(service.latency_bound_ms),
        "batch_size": service.batch_size,
        "min_replicas": service.min_replicas,
        "max_replicas": service.max_replicas,
        "replicas_target": service.replicas_target,
        "replicas_live": sum(1 for r in replicas if r["state"] == JobState.RUNNING.value),
        "replicas": replicas,
        "partners": [partners[pk] for pk in sorted(partners)],
        "request_rate_rps": rate,
        "forecast_rps": number(service.forecast_rps),
        "p99_ms": p99,
        "over_bound": over_bound(p99, service.latency_bound_ms),
        "calibration": number(service.calibration),
        "replica_min_throughput": number(service.replica_min_throughput),
        "slo_note": service.slo_note,
        "planned_at": iso(service.planned_at),
        "traffic": traffic,
    }

