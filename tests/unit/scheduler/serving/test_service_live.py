"""The live kind `service`: a member sees its tenant's services, staff all, in the snapshot and in
the events that a traffic report, a service change or a replica's job event sends after its
commit; the traffic series is bounded; a page replaying the events ends at a fresh snapshot."""
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from gogh_web.events.models import Event
from gogh_web.events.selectors import events_after, snapshot, viewer_for
from scheduler import services
from scheduler.live import job_changed
from scheduler.models import Job, Service, ServiceTraffic
from scheduler.serving.live import services_changed
from scheduler.serving.page import CHART_HOURS, CHART_POINTS, SLOT_S, traffic_of
from scheduler.serving.traffic import service_traffic_record
from tests.unit.gogh_web.events.conftest import apply_events, plain

# `as` marks the fixtures re-exported, for pytest to find by name.
from .console import detector as detector, make_job, ranker as ranker


@pytest.fixture
def committed(django_capture_on_commit_callbacks, monkeypatch):
    monkeypatch.setattr(services, "_send_round", lambda trigger: None)
    monkeypatch.setattr(services, "_send_prediction", lambda job_id: None)
    return lambda: django_capture_on_commit_callbacks(execute=True)


def newest_event_id():
    return Event.objects.order_by("-id").values_list("id", flat=True).first() or 0


def shown(user):
    return snapshot(viewer_for(user))["state"]["service"]


def test_snapshot_scoped_like_the_tenants(ranker, detector, alice, bob, staff, make_user):
    assert [s["name"] for s in shown(alice).values()] == ["ranker"]
    assert [s["name"] for s in shown(bob).values()] == ["detector"]
    assert {s["name"] for s in shown(staff).values()} == {"ranker", "detector"}
    assert shown(make_user("nobody")) == {}


def test_a_row_holds_the_plan_the_traffic_and_the_replicas_with_their_partners(ranker, alice, cluster):
    row = shown(alice)[str(ranker.pk)]
    assert (row["tenant"], row["latency_bound_ms"], row["batch_size"], row["min_replicas"], row["max_replicas"]) == (
        "research", 50.0, 8, 1, 4)
    assert (row["request_rate_rps"], row["forecast_rps"], row["p99_ms"], row["over_bound"]) == (120.0, 150.0, 42.0,
                                                                                               False)
    assert (row["replicas_target"], row["replicas_live"], row["calibration"], row["replica_min_throughput"]) == (
        2, 1, 1.25, 9.5)
    running, pending = row["replicas"]
    assert running["state"] == "running" and pending["state"] == "pending" and pending["gpus"] == []
    assert running["gpus"] == [{"gpu_id": cluster[0].pk, "gpu_type": "v100", "node": "v100-a"}]
    training = Job.objects.get(service__isnull=True)
    assert running["partners"] == [{"job_id": training.pk, "workload": "LM (batch size 20)", "kind": "training"}]


def test_over_bound_follows_the_reported_p99_and_is_unknown_before_any(detector, bob):
    assert shown(bob)[str(detector.pk)]["over_bound"] is True
    Service.objects.filter(pk=detector.pk).update(p99_ms=None)
    assert shown(bob)[str(detector.pk)]["over_bound"] is None


def test_traffic_sums_replicas_per_slot_keeps_the_worst_p99_and_leaves_older_samples_out(ranker, alice, resnet50):
    first, second = Job.objects.filter(service=ranker).order_by("pk")
    now = timezone.now()
    slot_start = now - timedelta(seconds=int(now.timestamp()) % SLOT_S)
    for job, rate, p99 in ((first, 40.0, 30.0), (first, 60.0, 35.0), (second, 25.0, 48.0)):
        ServiceTraffic.objects.create(service=ranker, job=job, at=slot_start, request_rate_rps=rate, p99_ms=p99)
    ServiceTraffic.objects.create(service=ranker, job=first, at=now - timedelta(hours=CHART_HOURS, minutes=10),
                                  request_rate_rps=999.0, p99_ms=999.0)
    points = traffic_of([ranker.pk], now=now)[ranker.pk]
    assert points == [{"at": slot_start.replace(microsecond=0).isoformat(), "rate_rps": 75.0, "p99_ms": 48.0}]


def test_traffic_is_at_most_chart_points_however_many_reports(ranker):
    replica = Job.objects.filter(service=ranker).first()
    now = timezone.now()
    ServiceTraffic.objects.bulk_create([
        ServiceTraffic(service=ranker, job=replica, at=now - timedelta(seconds=20 * i), request_rate_rps=float(i))
        for i in range(CHART_HOURS * 180)  # a report every 20 s over the whole window
    ])
    points = traffic_of([ranker.pk], now=now)[ranker.pk]
    assert CHART_POINTS - 1 <= len(points) <= CHART_POINTS
    assert all(point["p99_ms"] is None for point in points)


def test_a_traffic_report_is_an_event_for_the_tenant_and_staff_only(ranker, detector, alice, bob, staff, committed):
    after = newest_event_id()
    replica = Job.objects.filter(service=ranker, state="running").get()
    with committed():
        service_traffic_record(job=replica, request_rate_rps=180.0, p99_ms=61.0)
    seen = events_after(viewer_for(alice), after)
    assert [(e["kind"], e["key"]) for e in seen] == [("service", str(ranker.pk))]
    assert (seen[0]["data"]["request_rate_rps"], seen[0]["data"]["p99_ms"], seen[0]["data"]["over_bound"]) == (
        180.0, 61.0, True)
    assert seen[0]["data"]["traffic"][-1]["rate_rps"] == 180.0
    assert events_after(viewer_for(bob), after) == []
    assert len(events_after(viewer_for(staff), after)) == 1


def test_a_refused_report_sends_nothing(ranker, committed):
    replica = Job.objects.filter(service=ranker).first()
    with committed(), pytest.raises(ValidationError):
        service_traffic_record(job=replica, request_rate_rps=-1.0, p99_ms=None)
    assert not Event.objects.filter(kind="service").exists() and not ServiceTraffic.objects.exists()


def test_a_replicas_job_event_carries_its_service_and_a_training_jobs_does_not(ranker, alice, committed):
    replica = Job.objects.filter(service=ranker, state="pending").get()
    training = Job.objects.get(service__isnull=True)
    with committed():
        job_changed(training)
    assert not Event.objects.filter(kind="service").exists()
    with committed():
        Job.objects.filter(pk=replica.pk).update(state="cancelled", finished_at=timezone.now())
        job_changed(Job.objects.get(pk=replica.pk))
    event = Event.objects.get(kind="service")
    assert event.tenant_id == ranker.tenant_id
    assert [r["state"] for r in event.data["replicas"]] == ["running"]  # an ended replica leaves the row


def test_a_stopped_service_is_a_delete(ranker, committed):
    with committed():
        Service.objects.filter(pk=ranker.pk).update(state="stopped", stopped_at=timezone.now())
        services_changed([ranker.pk])
    event = Event.objects.get(kind="service")
    assert (event.key, event.op, event.tenant_id) == (str(ranker.pk), "delete", ranker.tenant_id)


def test_state_after_applying_events_equals_a_fresh_snapshot(measured, ranker, detector, alice, bob, staff,
                                                             resnet50, committed):
    viewers = {user.username: viewer_for(user) for user in (alice, bob, staff)}
    starts = {name: plain(snapshot(viewer)) for name, viewer in viewers.items()}
    with committed():
        make_job(bob, resnet50, service=detector)
        services_changed([detector.pk])
    with committed():
        services.scheduling_round_run(trigger="manual")  # places pending replicas: their service follows
    with committed():
        for replica in Job.objects.filter(service__isnull=False, state="placed"):
            services.job_transition(job=replica, to="running", reason="Started by its node agent.")
    with committed():
        for replica in Job.objects.filter(service__isnull=False, state="running"):
            service_traffic_record(job=replica, request_rate_rps=30.0 + replica.pk, p99_ms=12.0)
    with committed():
        Service.objects.filter(pk=ranker.pk).update(replicas_target=3, forecast_rps=210.0, slo_note="at risk")
        services_changed([ranker.pk])
    with committed():
        Service.objects.filter(pk=detector.pk).update(state="stopped")
        services_changed([detector.pk])

    for name, viewer in viewers.items():
        events = events_after(viewer, starts[name]["event_id"], limit=10_000)
        assert apply_events(starts[name]["state"], events) == plain(snapshot(viewer)["state"]), name
    final = shown(staff)
    assert set(final) == {str(ranker.pk)} and final[str(ranker.pk)]["slo_note"] == "at risk"
    live = Job.objects.filter(service=ranker, state="running").count()
    assert live >= 2 and final[str(ranker.pk)]["replicas_live"] == live and final[str(ranker.pk)]["traffic"]
    assert Event.objects.filter(kind="service", data__replicas_live=live).exists()  # the round's placements went out
