"""A round's plan of every service: the rate it plans for (observed now, or the forecast from
earlier days), the calibration from the reported P99, replicas added or removed, and every live
replica's T_min; stopping a service cancels its replicas."""
from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.test import override_settings
from django.utils import timezone

from scheduler.lifecycle import JobState
from scheduler.models import Allocation, ServiceState, ServiceTraffic, SolveRun
from scheduler.services import job_transition, scheduling_round_run
from scheduler.serving import forecast, latency
from scheduler.serving.forecast import DAY_S
from scheduler.serving.services import service_create, service_stop, services_plan

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("without_rate_headroom")]


def _report(service, job, rate, at, p99=None):
    ServiceTraffic.objects.create(service=service, job=job, at=at, request_rate_rps=rate, p99_ms=p99)


def _live(service):
    return list(service.replicas.exclude(state=JobState.CANCELLED.value).order_by("pk"))


def test_a_rising_rate_adds_replicas_and_a_falling_one_cancels_the_surplus(alice, measured, ranker_data):
    service = service_create(owner=alice, data=ranker_data)
    first = service.replicas.get()
    now = timezone.now()
    _report(service, first, 1500.0, now - timedelta(seconds=10))
    services_plan(now=now)
    service.refresh_from_db()
    need = latency.required_steps_per_s(500.0, 500.0, 64, margin=0.2)
    assert service.forecast_rps == pytest.approx(1500.0) and service.replicas_target == 3
    assert [job.min_throughput for job in _live(service)] == pytest.approx([need] * 3)
    assert need > first.min_throughput  # more traffic per replica than planned at creation
    assert [job.name for job in _live(service)][1:] == ["ranker replica 2", "ranker replica 3"]

    job_transition(job=first, to=JobState.PLACED.value)
    later = now + timedelta(seconds=400)  # the 1500 requests/s are out of the window of "now", not of the wait
    _report(service, first, 100.0, later - timedelta(seconds=5))
    services_plan(now=later)
    service.refresh_from_db()
    assert service.replicas_target == 3 and len(_live(service)) == 3  # down only once lower for the whole wait
    assert service.forecast_rps < 150  # the forecast is the rate now, and each replica's T_min follows it
    assert len({job.min_throughput for job in _live(service)}) == 1 and _live(service)[0].min_throughput < need / 3
    latest = now + timedelta(seconds=forecast.RECENT_SPAN_S + 60)
    _report(service, first, 100.0, latest - timedelta(seconds=5))
    services_plan(now=latest)
    service.refresh_from_db()
    assert service.replicas_target == 1
    assert [job.pk for job in _live(service)] == [first.pk]  # the pending ones went, the placed one stays
    cancelled = service.replicas.filter(state=JobState.CANCELLED.value)
    assert cancelled.count() == 2 and all("scaled down to 1 replica" in job.state_reason for job in cancelled)


def test_when_even_max_replicas_cannot_the_plan_says_so(alice, measured, ranker_data):
    service = service_create(owner=alice, data={**ranker_data, "max_replicas": 2})
    now = timezone.now()
    _report(service, service.replicas.get(), 5000.0, now)
    services_plan(now=now)
    service.refresh_from_db()
    assert service.replicas_target == 2 and "even 2 replicas need" in service.slo_note


@override_settings(GOGH_SCHEDULING_INTERVAL_S=30.0)
def test_the_forecast_plans_for_what_this_time_brought_yesterday(alice, measured, ranker_data, resnet50):
    resnet50.restart_overhead_s = 30.0
    resnet50.save()
    service = service_create(owner=alice, data=ranker_data)
    replica, now = service.replicas.get(), timezone.now()
    back = now - timedelta(seconds=DAY_S)
    _report(service, replica, 100.0, back - timedelta(seconds=870))  # yesterday at this time
    _report(service, replica, 1000.0, back + timedelta(seconds=950))  # yesterday a round later
    _report(service, replica, 100.0, now - timedelta(seconds=10))  # now: as yesterday
    services_plan(now=now)
    service.refresh_from_db()
    assert service.forecast_rps == pytest.approx(1000.0) and service.replicas_target == 2


def test_without_reports_the_expected_rate_is_planned(alice, measured, ranker_data):
    service = service_create(owner=alice, data={**ranker_data, "expected_rate_rps": 900.0})
    services_plan()
    service.refresh_from_db()
    assert service.forecast_rps == 900.0 and service.replicas_target == 2


def test_the_calibration_learns_from_each_new_p99_once(alice, measured, ranker_data):
    service = service_create(owner=alice, data=ranker_data)
    replica = service.replicas.get()
    v100 = next(gpu for gpu in measured if gpu.gpu_type.name == "v100")
    Allocation.objects.create(job=replica, gpu=v100, start=timezone.now(), predicted_throughput=10.0)
    modelled = latency.p99_ms(10.0, 100.0, 64)  # one V100 alone, 100 requests/s
    now = timezone.now() + timedelta(seconds=1)
    _report(service, replica, 100.0, now, p99=2 * modelled)
    service.request_rate_rps, service.p99_ms = 100.0, 2 * modelled
    service.save()
    services_plan(now=now + timedelta(seconds=1))
    service.refresh_from_db()
    expected = latency.Calibration().learnt(10.0, 100.0, 64, 2 * modelled)
    assert expected.latency > 1.0 and expected.speed < 1.0  # at this load the queue is part of the P99
    assert (service.calibration, service.speed_factor) == pytest.approx((expected.latency, expected.speed))
    assert service.calibration_spread == pytest.approx(list(expected.spread))
    assert service.replica_min_throughput == pytest.approx(expected.required_steps_per_s(100.0, 500.0, 64, 0.2))
    services_plan(now=now + timedelta(seconds=60))  # no new report: nothing learnt twice
    service.refresh_from_db()
    assert (service.calibration, service.speed_factor) == pytest.approx((expected.latency, expected.speed))
    assert service.calibration_spread == pytest.approx(list(expected.spread))


def test_a_round_plans_the_services_before_it_solves_and_a_dry_run_does_not(alice, measured, ranker_data):
    service = service_create(owner=alice, data=ranker_data)
    _report(service, service.replicas.get(), 1500.0, timezone.now())
    scheduling_round_run(trigger="manual", dry_run=True)
    assert service.replicas.count() == 1 and SolveRun.objects.count() == 1
    result = scheduling_round_run(trigger="manual")
    assert service.replicas.count() == 3 and result.solve_run.num_jobs == 3


def test_a_stopped_service_is_not_planned(alice, measured, ranker_data):
    service = service_create(owner=alice, data=ranker_data)
    service_stop(service=service, by=alice)
    _report(service, service.replicas.get(), 1500.0, timezone.now())
    assert services_plan() == [] and service.replicas.count() == 1


def test_stopping_cancels_every_replica_by_its_tenant_or_staff_only(alice, bob, staff, make_user, measured,
                                                                    ranker_data):
    service = service_create(owner=alice, data={**ranker_data, "min_replicas": 2})
    with pytest.raises(PermissionDenied):
        service_stop(service=service, by=bob)
    service.refresh_from_db()
    assert service.state == ServiceState.ACTIVE and len(_live(service)) == 2
    service_stop(service=service, by=make_user("carol", tenant="research"))
    service.refresh_from_db()
    assert service.state == ServiceState.STOPPED and service.stopped_at is not None
    assert all(job.state == JobState.CANCELLED.value and "stopped" in job.state_reason
               for job in service.replicas.all())
    with pytest.raises(ValidationError):
        service_stop(service=service, by=staff)


def test_a_service_whose_owner_left_its_tenant_is_not_planned_and_the_round_goes_on(alice, bob, measured,
                                                                                   ranker_data):
    service = service_create(owner=alice, data=ranker_data)
    other = service_create(owner=bob, data={**ranker_data, "name": "other"})
    alice.membership.delete()
    now = timezone.now()
    for each in (service, other):
        _report(each, each.replicas.get(), 1500.0, now)
    assert [planned.pk for planned in services_plan(now=now)] == [other.pk]
    service.refresh_from_db()
    assert "no longer a member of research" in service.slo_note and service.replicas.count() == 1
    assert service.replicas_target == 1  # the failed plan was rolled back
    assert other.replicas.count() == 3


def test_without_pending_replicas_the_most_recently_started_are_removed_first(alice, measured, ranker_data):
    service = service_create(owner=alice, data={**ranker_data, "min_replicas": 1, "expected_rate_rps": 1500.0})
    services_plan()
    first, second, third = _live(service)
    for job in (second, first, third):  # started in this order: the first replica is the second oldest
        job_transition(job=job_transition(job=job, to=JobState.PLACED.value), to=JobState.RUNNING.value)
    now = timezone.now()
    _report(service, first, 100.0, now)
    services_plan(now=now)
    assert [job.pk for job in _live(service)] == [second.pk]
    assert {job.pk for job in service.replicas.filter(state=JobState.CANCELLED.value)} == {first.pk, third.pk}
