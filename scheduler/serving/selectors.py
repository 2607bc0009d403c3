"""Reads for inference services (docs/services.md): who sees which service, the fastest
predicted speed of a workload, a service's traffic as the forecast wants it, and its replicas."""
from datetime import timedelta

from django.db.models import Prefetch, Q, QuerySet

from catalog.models import GpuType

from ..lifecycle import TERMINAL
from ..models import Allocation, Job, Service, ServiceTraffic
from ..selectors import tenant_of
from .forecast import DAYS, DAY_S, RECENT_SPAN_S, WINDOW_S

#: A replica's latest report older than this no longer counts in its service's rate
#: (traffic.service_traffic_record sums the latest of each replica within it).
RECENT_S = 120
LIVE_REPLICA = ~Q(state__in=[state.value for state in TERMINAL])


def services_visible_to(user) -> QuerySet[Service]:
    """Staff see every service; everyone else only those of their own tenant."""
    services = Service.objects.select_related("workload", "tenant", "owner")
    if user.is_staff:
        return services
    tenant = tenant_of(user)
    return services.filter(tenant=tenant) if tenant is not None else services.none()


def may_manage(user, service: Service) -> bool:
    """Its tenant's members and staff may stop a service, as they may cancel its tenant's jobs."""
    return user.is_staff or tenant_of(user) == service.tenant


def live_replicas(service: Service) -> QuerySet[Job]:
    """The service's replicas that have not ended, oldest first."""
    return service.replicas.filter(LIVE_REPLICA).order_by("submitted_at", "pk")


def cluster_gpu_types() -> list[str]:
    """The names of the GPU types of which the cluster has a GPU: where a replica could run."""
    return sorted(GpuType.objects.filter(gpus__isnull=False).distinct().values_list("name", flat=True))


def replica_speeds(service: Service, predictions) -> list[float]:
    """The predicted speed (steps/s) of each placed replica where it runs now: its GPU type's
    single-GPU speed times its partners' co-location fraction (P1/P2's rho; unknown: 1).
    Replicas without an open allocation, or whose speed is unknown, are left out."""
    rows = (
        Allocation.objects.filter(end__isnull=True, job__service=service)
        .select_related("gpu__gpu_type")
        .prefetch_related(Prefetch("partners", queryset=Job.objects.select_related("workload")))
    )
    workload = service.workload.name
    speeds = []
    for row in rows:
        gpu_type = row.gpu.gpu_type.name
        tau = predictions.tau(workload, gpu_type, 1, True) or 0.0
        for partner in row.partners.all():
            rho = predictions.rho(workload, partner.workload.name, gpu_type)
            tau *= 1.0 if rho is None else rho
        if tau > 0:
            speeds.append(tau)
    return speeds


def forecast_samples(service: Service, *, now, horizon_s: float) -> list[tuple[float, float]]:
    """(seconds since the epoch, the service's total request rate) where the forecast looks:
    the last RECENT_SPAN_S, and on each of the last DAYS days the windows around this time and
    `horizon_s` later. Each report is one replica's rate: the total at a report is the sum of
    every replica's latest report within RECENT_S (as service_traffic_record sums it)."""
    near = Q(at__gte=now - timedelta(seconds=RECENT_SPAN_S + RECENT_S), at__lte=now)
    for day in range(1, DAYS + 1):
        back = now - timedelta(seconds=day * DAY_S)
        near |= Q(at__gte=back - timedelta(seconds=WINDOW_S + RECENT_S),
                  at__lte=back + timedelta(seconds=horizon_s + WINDOW_S))
    rows = ServiceTraffic.objects.filter(near, service=service).order_by("at", "id").values_list(
        "at", "job_id", "request_rate_rps"
    )
    return service_totals([(at.timestamp(), job_id, rate) for at, job_id, rate in rows])


def service_totals(reports: list[tuple[float, int | None, float]]) -> list[tuple[float, float]]:
    """(time, total rate) at each report of (time, replica, rate), in time order: the sum of
    every replica's latest rate within RECENT_S of that time."""
    latest: dict[int | None, tuple[float, float]] = {}
    out = []
    for t, job_id, rate in reports:
        latest[job_id] = (t, rate)
        out.append((t, sum(r for seen, r in latest.values() if t - seen <= RECENT_S)))
    return out


def traffic_since(service: Service, since) -> QuerySet[ServiceTraffic]:
    """The service's traffic reports since `since`, newest first."""
    return ServiceTraffic.objects.filter(service=service, at__gte=since).order_by("-at", "-id")


def newest_p99_report_since(service: Service, since) -> bool:
    """Whether a replica reported a P99 after `since` (None: ever): the calibration learns from
    each report once, not again every round."""
    reports = ServiceTraffic.objects.filter(service=service, p99_ms__isnull=False)
    return (reports.filter(at__gt=since) if since is not None else reports).exists()
