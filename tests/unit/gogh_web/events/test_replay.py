"""The live-update guarantee: a page that starts from a snapshot and applies the events after
its id ends where a fresh snapshot is, for every viewer, whatever the services did meanwhile."""
from datetime import timedelta

from django.db.models import F
from django.db.models.functions import Greatest
from django.utils import timezone

from catalog.models import GpuType, PredictorVersion
from catalog.services.predictors import predictor_promote, predictor_rollback
from gogh_web.events.models import Event
from gogh_web.events.selectors import events_after, snapshot, viewer_for
from scheduler import services
from scheduler.live import job_changed
from scheduler.models import Job, JobInterruption, Service, Tenant
from scheduler.profiling.live import gpu_type_profile_changed
from scheduler.serving.live import services_changed
from scheduler.tenancy.services import tenant_quotas_replace, tenant_update
from telemetry.gpu_speed import Cell, SpeedTracker
from telemetry.models import Gpu
from telemetry.services import gpu_samples_ingest, gpu_speeds_write, node_set_state

from .conftest import apply_events, plain

KINDS = {
    "job", "node", "gpu", "solve_run", "solver_config", "tenant", "service", "predictor_version", "gpu_type_profile",
}


def _version(status, mae):
    return PredictorVersion.objects.create(name="p1", architecture="feedforward", status=status,
                                           metrics={"val_mae": mae}, weights_file="x.pt", weights_sha256="0" * 64)


def test_state_after_applying_events_equals_a_fresh_snapshot(measured, alice, bob, staff, resnet50, lm, committed,
                                                             settings):
    settings.GOGH_LIVE_ENDED_JOBS_KEPT = 1  # so that jobs and solve runs also leave their windows
    settings.GOGH_LIVE_SOLVE_RUNS_KEPT = 2
    active, candidate = _version("active", 0.2), _version("candidate", 0.1)
    viewers = {user.username: viewer_for(user) for user in (alice, bob, staff)}
    starts = {name: plain(snapshot(viewer)) for name, viewer in viewers.items()}

    with committed():
        mine = services.job_submit(owner=alice, workload=resnet50, min_throughput=8, max_gpus=1).job
        early = services.job_submit(owner=alice, workload=lm, min_throughput=1, max_gpus=1).job
        theirs = services.job_submit(owner=bob, workload=lm, min_throughput=15, max_gpus=1).job
    with committed():
        services.scheduling_round_run(trigger="manual")
    with committed():
        services.job_transition(job=Job.objects.get(pk=mine.pk), to="running", reason="Started by its node agent.")
    with committed():
        services.job_cancel(job=early, by=alice)
    with committed():
        services.job_cancel(job=theirs, by=bob)  # alice's ended job leaves the window of one
    with committed():
        node = Gpu.objects.get(allocations__job=mine, allocations__end__isnull=True).node
        node_set_state(node=node, state="down", reason="maintenance")  # mine goes back to pending
    with committed():
        now = timezone.now()
        samples = [{"gpu": gpu.uuid, "ts": now - timedelta(seconds=s), "power_w": 100.0 + s, "utilization": 0.5,
                    "throttle_reasons": 0x80}  # a health note (docs/gpu_health.md)
                   for gpu in Gpu.objects.all()[:2] for s in range(3)]
        gpu_samples_ingest(agent_user=staff, samples=samples)
    with committed():
        tracker = SpeedTracker(min_observations=1)
        first = Gpu.objects.order_by("pk").first()
        tracker.observe([str(first.pk + 1)], Cell("w", "v100"), 10.0)
        tracker.observe([str(first.pk)], Cell("w", "v100"), 8.0)  # a board learnt slow, flagged
        gpu_speeds_write(tracker=tracker, gpu_ids=[first.pk])
    with committed():
        services.solver_config_update(by=staff, values={"base_energy_weight": 2.0})
    with committed():
        research = Tenant.objects.get(slug="research")
        tenant_update(tenant=research, values={"shares": 3})
        tenant_quotas_replace(tenant=research, quotas={GpuType.objects.get(name="k80"): 1})
    with committed():
        ranker = Service.objects.create(name="ranker", owner=alice, tenant=research, workload=resnet50,
                                        latency_bound_ms=50, batch_size=8)
        Job.objects.create(owner=alice, tenant=research, workload=resnet50, min_throughput=1, max_gpus=1,
                           service=ranker, pending_reason="waiting")  # the last rounds place it
        services_changed([ranker.pk])
    with committed():
        predictor_promote(version=candidate)  # the active version retires
    with committed():
        predictor_rollback(version=active)
    with committed():
        GpuType.objects.filter(name="v100").update(profiled_at=timezone.now())  # as a campaign's end does
        gpu_type_profile_changed("v100")
    with committed():
        services.scheduling_round_run(trigger="manual")
        services.scheduling_round_run(trigger="manual")  # the first round leaves the window of two

    for name, viewer in viewers.items():
        start = starts[name]
        events = events_after(viewer, start["event_id"], limit=10_000)
        assert apply_events(start["state"], events) == plain(snapshot(viewer)["state"]), name

    alice_keys = {(e["kind"], e["key"]) for e in events_after(viewers["alice"], 0, limit=10_000)}
    assert ("job", str(mine.pk)) in alice_keys and ("job", str(theirs.pk)) not in alice_keys
    assert {kind for kind, _ in alice_keys} == KINDS  # every kind went through the replay
    assert Event.objects.filter(kind="job", key=str(early.pk), op="delete").exists()
    assert Event.objects.filter(kind="solve_run", op="delete").exists()
    final = snapshot(viewers["alice"])["state"]
    assert final["job"][str(mine.pk)]["state"] == "pending"  # its V100 node went down; a K80 is too slow
    assert final["node"][str(node.pk)]["state"] == "down"
    assert final["gpu"][str(first.pk)]["speed_flag"] and round(final["gpu"][str(first.pk)]["speed_factor"], 9) == 0.8
    assert set(final) == KINDS
    assert {key: v["status"] for key, v in final["predictor_version"].items()} == {
        str(active.pk): "active",
        str(candidate.pk): "retired",
    }


def _interrupt(job_id, minute, steps_done, checkpoint):
    """What a round's move of a running job writes (H2's service): the interruption row, the
    job's restart counters and resume point, and the job's event, in one transaction."""
    job = Job.objects.get(pk=job_id)
    JobInterruption.objects.create(
        job=job, kind="moved", reason=f"Moved at minute {minute}.", at=timezone.now() + timedelta(minutes=minute),
        was_running=True, steps_done=steps_done, resume_step=checkpoint, steps_lost=steps_done - checkpoint,
    )
    Job.objects.filter(pk=job_id).update(
        restarts=F("restarts") + 1, steps_lost=F("steps_lost") + steps_done - checkpoint, checkpoint_step=checkpoint,
        resume_step=checkpoint, current_step=checkpoint, steps_done=Greatest("steps_done", steps_done),
    )
    job_changed(job)


def test_interruptions_replayed_equal_a_fresh_snapshot(measured, alice, resnet50, committed):
    """Six restarts, each with its event: the page's job ends as the snapshot has it, its five
    newest interruptions listed, all six counted, its best step never lowered by a restart."""
    viewer = viewer_for(alice)
    start = plain(snapshot(viewer))
    with committed():
        job = services.job_submit(owner=alice, workload=resnet50, min_throughput=8, max_gpus=1, total_steps=5000).job
    for minute in range(6):
        with committed():
            _interrupt(job.pk, minute, steps_done=400 + 100 * minute, checkpoint=300 + 100 * minute)

    events = events_after(viewer, start["event_id"], limit=10_000)
    final = snapshot(viewer)["state"]
    assert apply_events(start["state"], events) == plain(final)
    shown = final["job"][str(job.pk)]
    assert (shown["restarts"], shown["steps_lost"], shown["interruptions"]["count"]) == (6, 600, 6)
    reasons = [i["reason"] for i in shown["interruptions"]["results"]]
    assert reasons == [f"Moved at minute {m}." for m in (5, 4, 3, 2, 1)]
    assert shown["progress"]["steps_done"] == 900 and shown["progress"]["current_step"] == 800
    best = [e["data"]["progress"]["steps_done"] for e in events if e["kind"] == "job" and e["op"] == "upsert"]
    assert len(best) == 7 and best == sorted(best)  # the submission, then one event per restart
