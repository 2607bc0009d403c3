"""/metrics: per active service its request rate, worst P99, bound and replicas (target and
live), labelled by service and tenant, read at scrape time; a stopped service's series end."""
from scheduler.models import Service
from tests.unit.scheduler.test_restart_metrics import scrape

# `as` marks the fixtures re-exported, for pytest to find by name.
from .console import detector as detector, ranker as ranker


def labels(service, tenant, **more):
    return tuple(sorted({"service_id": str(service.pk), "service": service.name, "tenant": tenant, **more}.items()))


def test_service_families(client_for, staff, ranker, detector):
    types, metrics = scrape(client_for(staff))
    for name in ("gogh_service_request_rate_rps", "gogh_service_p99_ms", "gogh_service_latency_bound_ms",
                 "gogh_service_replicas"):
        assert types[name] == "gauge", name
    mine, theirs = labels(ranker, "research"), labels(detector, "vision")
    assert metrics[("gogh_service_request_rate_rps", mine)] == 120.0
    assert metrics[("gogh_service_p99_ms", mine)] == 42.0
    assert metrics[("gogh_service_latency_bound_ms", mine)] == 50.0
    assert metrics[("gogh_service_replicas", labels(ranker, "research", kind="target"))] == 2
    assert metrics[("gogh_service_replicas", labels(ranker, "research", kind="live"))] == 1  # one running, one pending
    assert metrics[("gogh_service_p99_ms", theirs)] == 31.5 and metrics[("gogh_service_latency_bound_ms", theirs)] == 20
    assert metrics[("gogh_service_replicas", labels(detector, "vision", kind="live"))] == 0


def test_no_p99_before_a_report_and_no_series_for_a_stopped_service(client_for, staff, ranker, detector):
    Service.objects.filter(pk=detector.pk).update(p99_ms=None)
    Service.objects.filter(pk=ranker.pk).update(state="stopped")
    _, metrics = scrape(client_for(staff))
    theirs = labels(detector, "vision")
    assert ("gogh_service_p99_ms", theirs) not in metrics and metrics[("gogh_service_request_rate_rps", theirs)] == 5
    assert not any(name.startswith("gogh_service_") and dict(key).get("service") == "ranker" for name, key in metrics)
