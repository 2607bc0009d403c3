"""What services emit besides the job life cycle (covered by test_replay): GPU samples once per
GPU per batch, node heartbeats only when the state changes, predictor versions on promotion
and rollback, and the pruning of old events."""
from datetime import timedelta

from django.utils import timezone

from catalog.models import PredictorVersion
from catalog.services.predictors import predictor_promote, predictor_rollback
from gogh_web.events.models import Event
from gogh_web.events.services import events_prune
from telemetry.models import Gpu
from telemetry.services import gpu_samples_ingest, node_heartbeat


def test_a_sample_batch_emits_one_event_per_gpu(cluster, staff, committed):
    now = timezone.now()
    gpus = Gpu.objects.order_by("pk")[:2]
    samples = [
        {"gpu": gpu.uuid, "ts": now - timedelta(seconds=s), "power_w": 200.0 - s} for gpu in gpus for s in range(5)
    ]
    with committed():
        gpu_samples_ingest(agent_user=staff, samples=samples)
    events = list(Event.objects.filter(kind="gpu"))
    assert sorted(e.key for e in events) == sorted(str(g.pk) for g in gpus)
    assert {e.data["power_w"] for e in events} == {200.0}  # the newest sample of each
    with committed():
        gpu_samples_ingest(agent_user=staff, samples=samples)  # a resend: nothing new, no event
    assert Event.objects.filter(kind="gpu").count() == 2


def test_a_heartbeat_emits_only_when_the_node_state_changes(cluster, staff, committed):
    node = Gpu.objects.first().node
    with committed():
        node_heartbeat(node=node, agent_user=staff)
    assert not Event.objects.exists()
    node.state = "down"
    node.save()
    with committed():
        node_heartbeat(node=node, agent_user=staff)
    assert [(e.kind, e.data["state"]) for e in Event.objects.all()] == [("node", "ready")]


def _version(status, mae):
    return PredictorVersion.objects.create(name="p1", architecture="feedforward", status=status,
                                           metrics={"val_mae": mae}, weights_file="x.pt", weights_sha256="0" * 64)


def test_promotion_and_rollback_emit_every_version_whose_status_changed(db, committed):
    old, new = _version("active", 0.2), _version("candidate", 0.1)
    with committed():
        predictor_promote(version=new)
    assert {(e.key, e.data["status"]) for e in Event.objects.all()} == {
        (str(old.pk), "retired"),
        (str(new.pk), "active"),
    }
    Event.objects.all().delete()
    with committed():
        predictor_rollback(version=old)
    assert {(e.key, e.data["status"]) for e in Event.objects.all()} == {
        (str(old.pk), "active"),
        (str(new.pk), "retired"),
    }


def test_pruning_deletes_old_events_but_keeps_the_newest(db):
    events = [Event.objects.create(kind="node", key=str(i), data={}) for i in range(3)]
    Event.objects.update(created_at=timezone.now() - timedelta(hours=2))
    assert events_prune(retention_s=3600) == 2
    assert list(Event.objects.values_list("pk", flat=True)) == [events[-1].pk]
    assert events_prune(retention_s=3600) == 0


def test_a_gpu_reported_failed_is_emitted(cluster, staff, committed):
    from telemetry.services import gpus_report_failed

    gpu = Gpu.objects.first()
    with committed():
        gpus_report_failed(node=gpu.node, agent_user=staff, failures=[{"uuid": gpu.uuid, "reason": "GPU is lost"}])
    assert [(e.key, e.data["state"]) for e in Event.objects.filter(kind="gpu")] == [(str(gpu.pk), "failed")]


def test_a_round_emits_a_pending_job_only_when_its_reason_changed(measured, alice, resnet50, committed):
    from scheduler import services

    with committed():
        services.job_submit(owner=alice, workload=resnet50, min_throughput=1000, max_gpus=1)  # never fits
    with committed():
        services.scheduling_round_run(trigger="manual")
    assert Event.objects.filter(kind="job").count() == 2  # submitted, then its first reason
    with committed():
        services.scheduling_round_run(trigger="manual")
    assert Event.objects.filter(kind="job").count() == 2  # the same reason: nothing to tell


def test_jobs_changed_in_bulk_are_one_batch_of_events(
    measured, alice, bob, resnet50, committed, django_capture_on_commit_callbacks
):
    from scheduler import live, services

    with committed():
        jobs = [
            services.job_submit(owner=owner, workload=resnet50, min_throughput=1, max_gpus=1).job
            for owner in (alice, bob, alice)
        ]
    Event.objects.all().delete()
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        live.jobs_changed(job.pk for job in jobs)
    assert len(callbacks) == 1  # one lock, one read, one insert
    assert list(Event.objects.values_list("key", "tenant_id")) == [(str(job.pk), job.tenant_id) for job in jobs]


def test_telemetry_measurements_of_a_job_are_found_through_an_index(db):
    from django.db import connection

    from catalog.models import Measurement

    with connection.cursor() as cursor:
        indexes = connection.introspection.get_constraints(cursor, Measurement._meta.db_table)
    assert any(index["index"] and index["columns"][:2] == ["source", "reference"] for index in indexes.values())
