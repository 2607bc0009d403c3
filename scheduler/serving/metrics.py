"""Services' metric families for /metrics (composed by gogh_web.metrics): per active service, the
request rate its replicas report, the worst P99 they report, its bound, and its replicas (the
last round's target and those running now). Labelled by service id and name (names need not be
unique) and tenant slug; a stopped service's series end."""
from django.db.models import Count
from prometheus_client.core import GaugeMetricFamily

from ..lifecycle import JobState
from ..models import Job, Service, ServiceState

LABELS = ["service_id", "service", "tenant"]
TARGET, LIVE = "target", "live"


def service_families():
    rate = GaugeMetricFamily("gogh_service_request_rate_rps",
                             "Requests per second the service's replicas report now (their sum).", labels=LABELS)
    p99 = GaugeMetricFamily("gogh_service_p99_ms", "The worst P99 latency the service's replicas last reported, ms "
                            "(absent before any report).", labels=LABELS)
    bound = GaugeMetricFamily("gogh_service_latency_bound_ms", "The service's SLO: P99 at most this many ms.",
                              labels=LABELS)
    replicas = GaugeMetricFamily("gogh_service_replicas", "Replicas of the service: the last round's target, and "
                                 "those running now (live).", labels=[*LABELS, "kind"])
    services = list(Service.objects.filter(state=ServiceState.ACTIVE).select_related("tenant").order_by("pk"))
    running = dict(Job.objects.filter(service__in=services, state=JobState.RUNNING.value)
                   .values_list("service_id").annotate(n=Count("id")).order_by())
    for service in services:
        labels = [str(service.pk), service.name, service.tenant.slug]
        rate.add_metric(labels, service.request_rate_rps)
        if service.p99_ms is not None:
            p99.add_metric(labels, service.p99_ms)
        bound.add_metric(labels, service.latency_bound_ms)
        replicas.add_metric([*labels, TARGET], service.replicas_target)
        replicas.add_metric([*labels, LIVE], running.get(service.pk, 0))
    yield from (rate, p99, bound, replicas)
