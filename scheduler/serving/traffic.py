"""Recording what a service's replicas report of their traffic (Django; a write service).

Each report of a replica becomes a ServiceTraffic sample. The service's request rate is the sum
over its replicas of each one's latest rate within RECENT_S, its P99 the worst of their latest
P99s (a request routed to the slowest replica sees that one's latency). The rounds read the
samples (forecast.py) and the P99 (latency.Calibration); the console shows both."""
import math
from datetime import timedelta

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from telemetry.agent.progress import MAX_P99_MS, MAX_RATE_RPS

from ..models import Job, Service, ServiceTraffic
from .live import services_changed
from .selectors import RECENT_S

# Reports beyond MAX_RATE_RPS and MAX_P99_MS (the line protocol's bounds, which the agent
# applies too) are refused as nonsense (a typo, a unit mistake), not stored.


def traffic_problems(request_rate_rps, p99_ms) -> dict[str, list[str]]:
    """Field -> messages for a traffic report that cannot be stored; {} when it can."""
    problems: dict[str, list[str]] = {}
    if not isinstance(request_rate_rps, int | float) or isinstance(request_rate_rps, bool) \
            or not math.isfinite(request_rate_rps) or not 0 <= request_rate_rps <= MAX_RATE_RPS:
        problems["request_rate_rps"] = [f"A number of requests per second from 0 to {MAX_RATE_RPS:g}."]
    if p99_ms is not None and (not isinstance(p99_ms, int | float) or isinstance(p99_ms, bool)
                               or not math.isfinite(p99_ms) or not 0 <= p99_ms <= MAX_P99_MS):
        problems["p99_ms"] = [f"A latency in ms from 0 to {MAX_P99_MS:g}, or absent."]
    return problems


@transaction.atomic
def service_traffic_record(*, job: Job, request_rate_rps: float, p99_ms: float | None, now=None) -> ServiceTraffic:
    """Store one replica's traffic report and refresh its service's rate and P99. A job that is
    no replica of a service, or a report out of range, raises ValidationError (field ->
    messages) and stores nothing."""
    now = now or timezone.now()
    if job.service_id is None:
        raise ValidationError(
            {"traffic": [f"Job {job.pk} is not a replica of a service; only services report traffic."]}
        )
    problems = traffic_problems(request_rate_rps, p99_ms)
    if problems:
        raise ValidationError(problems)
    service = Service.objects.select_for_update().get(pk=job.service_id)
    sample = ServiceTraffic.objects.create(
        service=service, job=job, at=now, request_rate_rps=float(request_rate_rps),
        p99_ms=None if p99_ms is None else float(p99_ms),
    )
    latest: dict[int, ServiceTraffic] = {}
    recent = ServiceTraffic.objects.filter(service=service, at__gte=now - timedelta(seconds=RECENT_S))
    for row in recent.order_by("at", "id"):
        latest[row.job_id] = row
    service.request_rate_rps = sum(row.request_rate_rps for row in latest.values())
    p99s = [row.p99_ms for row in latest.values() if row.p99_ms is not None]
    service.p99_ms = max(p99s) if p99s else service.p99_ms
    service.save(update_fields=["request_rate_rps", "p99_ms", "updated_at"])
    services_changed([service.pk])
    return sample
