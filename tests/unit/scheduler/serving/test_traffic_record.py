"""A replica's traffic report: stored, summed over replicas, refused for a job of no service."""
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from scheduler.models import Job, Service, ServiceTraffic
from scheduler.serving.traffic import RECENT_S, service_traffic_record


@pytest.fixture
def service(alice, resnet50):
    return Service.objects.create(name="ranker", owner=alice, tenant=alice.membership.tenant, workload=resnet50,
                                  latency_bound_ms=50, min_replicas=1, max_replicas=4, batch_size=8)


def _job(user, workload, service=None):
    return Job.objects.create(owner=user, tenant=user.membership.tenant, workload=workload, min_throughput=1,
                              max_gpus=1, service=service, pending_reason="waiting")


@pytest.mark.django_db
def test_rates_sum_over_replicas_latest_reports_and_p99_is_the_worst(alice, resnet50, service):
    first, second = _job(alice, resnet50, service), _job(alice, resnet50, service)
    now = timezone.now()
    service_traffic_record(job=first, request_rate_rps=10, p99_ms=20, now=now - timedelta(seconds=30))
    service_traffic_record(job=first, request_rate_rps=30, p99_ms=25, now=now - timedelta(seconds=10))
    service_traffic_record(job=second, request_rate_rps=40, p99_ms=45, now=now)
    service.refresh_from_db()
    assert service.request_rate_rps == pytest.approx(70) and service.p99_ms == 45
    assert ServiceTraffic.objects.filter(service=service).count() == 3


@pytest.mark.django_db
def test_a_replica_silent_too_long_drops_out_of_the_rate(alice, resnet50, service):
    first, second = _job(alice, resnet50, service), _job(alice, resnet50, service)
    now = timezone.now()
    service_traffic_record(job=first, request_rate_rps=50, p99_ms=None, now=now - timedelta(seconds=RECENT_S + 1))
    service_traffic_record(job=second, request_rate_rps=20, p99_ms=None, now=now)
    service.refresh_from_db()
    assert service.request_rate_rps == 20 and service.p99_ms is None


@pytest.mark.django_db
def test_a_job_of_no_service_is_refused_and_nothing_is_stored(alice, resnet50, service):
    with pytest.raises(ValidationError) as refused:
        service_traffic_record(job=_job(alice, resnet50), request_rate_rps=10, p99_ms=5)
    assert "traffic" in refused.value.message_dict
    assert not ServiceTraffic.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(("rate", "p99", "field"), [
    (-1, 5, "request_rate_rps"), (float("nan"), 5, "request_rate_rps"), ("10", 5, "request_rate_rps"),
    (True, 5, "request_rate_rps"), (10, -3, "p99_ms"), (10, float("inf"), "p99_ms"),
])
def test_a_report_out_of_range_is_refused_and_nothing_is_stored(alice, resnet50, service, rate, p99, field):
    with pytest.raises(ValidationError) as refused:
        service_traffic_record(job=_job(alice, resnet50, service), request_rate_rps=rate, p99_ms=p99)
    assert field in refused.value.message_dict
    service.refresh_from_db()
    assert not ServiceTraffic.objects.exists() and service.request_rate_rps == 0
