"""The apply step of a round writes in bulk: every move still checked by scheduler.lifecycle on
the locked job, the same states, reasons and allocations as one transition per job gave, and
one batch of live events for all the jobs that changed, in a number of queries that does not
grow with the number of jobs."""
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from gogh_web.events import sending
from gogh_web.events.models import Event
from scheduler import services
from scheduler.models import Allocation, Job, SolveRun
from scheduler.optimizer import problem as opt
from telemetry.models import Gpu, Node


def make_job(owner, workload, state="pending"):
    job = Job.objects.create(owner=owner, tenant=owner.membership.tenant, workload=workload, min_throughput=1.0,
                             max_gpus=1, pending_reason="Waiting for the next scheduling round.")
    for step in {"pending": [], "placed": ["placed"], "running": ["placed", "running"]}[state]:
        job = services.job_transition(job=job, to=step, reason="test")
    return job


def hold(job, gpu, partners=(), start=None):
    Allocation.objects.create(job=job, gpu=gpu, start=start or timezone.now()).partners.set(partners)


def place(job, gpu, partners=()):
    return opt.Placement(job_id=str(job.pk), gpu_type="v100", gpu_ids=(str(gpu.pk),), consolidated=True,
                         partners=tuple(str(p.pk) for p in partners), predicted_throughput=5.0, predicted_power_w=100.0)


def decision(placements, reasons=None):
    return opt.Plan(solver="ilp", placements={p.job_id: p for p in placements}, reasons=reasons or {},
                          power_w=100.0, objective=100.0, status="optimal", energy_weight=1.0, load=0.0)


def open_rows(job):
    return {(row.gpu_id, frozenset(row.partners.values_list("pk", flat=True)), row.start)
            for row in Allocation.objects.filter(job=job, end__isnull=True)}


def test_one_decision_places_preempts_migrates_repartners_and_leaves_ended_jobs_alone(
        cluster, alice, resnet50, lm, django_capture_on_commit_callbacks):
    gpus = cluster
    earlier = timezone.now()
    new_a, new_b = make_job(alice, resnet50), make_job(alice, lm)
    preempted = make_job(alice, resnet50, "running")
    hold(preempted, gpus[2], start=earlier)
    migrated = make_job(alice, lm, "placed")
    hold(migrated, gpus[3], start=earlier)
    survivor, partner = make_job(alice, resnet50, "running"), make_job(alice, lm, "running")
    hold(survivor, gpus[5], [partner], start=earlier)
    hold(partner, gpus[5], [survivor], start=earlier)
    services.job_transition(job=partner, to="succeeded", reason="done")
    ended = make_job(alice, lm)
    kept = make_job(alice, resnet50, "running")
    hold(kept, gpus[4], start=earlier)
    reasoned, same_reason = make_job(alice, lm), make_job(alice, resnet50)
    services.job_cancel(job=ended, by=alice)  # after the round read it, before it applied
    run = SolveRun.objects.create(solver="ilp", trigger="manual")
    now = timezone.now()
    choice = decision(
        [place(new_a, gpus[0], [new_b]), place(new_b, gpus[0], [new_a]), place(migrated, gpus[1]),
         place(survivor, gpus[5]), place(ended, gpus[3]), place(kept, gpus[4])],
        {str(preempted.pk): "Room for priority 2.", str(reasoned.pk): "No GPU type reaches T_min.",
         str(same_reason.pk): "Waiting for the next scheduling round."},
    )
    Event.objects.all().delete()

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        services._apply(choice, run, now)

    state = {job.pk: (job.state, job.state_reason, job.pending_reason) for job in Job.objects.all()}
    assert state[new_a.pk] == state[new_b.pk] == ("placed", f"Placed by solve {run.pk}.", "")
    assert open_rows(new_a) == {(gpus[0].pk, frozenset({new_b.pk}), now)}
    assert open_rows(new_b) == {(gpus[0].pk, frozenset({new_a.pk}), now)}
    reason = f"Preempted by solve {run.pk}: Room for priority 2."
    assert state[preempted.pk] == ("pending", reason, reason) and not open_rows(preempted)
    assert Allocation.objects.get(job=preempted).end == now
    assert state[migrated.pk] == ("placed", f"Placed by solve {run.pk}.", "")
    assert open_rows(migrated) == {(gpus[1].pk, frozenset(), now)}
    assert Allocation.objects.get(job=migrated, gpu=gpus[3]).end == now
    assert state[survivor.pk] == ("running", "test", "")  # its partner ended: not a migration
    assert open_rows(survivor) == {(gpus[5].pk, frozenset(), now)}
    assert state[ended.pk][0] == "cancelled" and not Allocation.objects.filter(job=ended).exists()
    assert open_rows(kept) == {(gpus[4].pk, frozenset(), earlier)}
    assert state[reasoned.pk] == ("pending", "", "No GPU type reaches T_min.")
    assert Job.objects.get(pk=new_a.pk).placed_at == now

    assert sum(getattr(c, "func", None) is sending._store_and_notify for c in callbacks) == 1  # one batch
    events = list(Event.objects.filter(kind="job").order_by("id"))
    assert sorted(int(e.key) for e in events) == sorted(
        [new_a.pk, new_b.pk, preempted.pk, migrated.pk, survivor.pk, reasoned.pk])
    assert {int(e.key): e.data["state"] for e in events} == {
        new_a.pk: "placed", new_b.pk: "placed", preempted.pk: "pending", migrated.pk: "placed",
        survivor.pk: "running", reasoned.pk: "pending",
    }


def test_applying_a_decision_takes_as_many_queries_for_twelve_jobs_as_for_three(alice, resnet50, v100):
    node = Node.objects.create(hostname="v100-wide", approved_at=timezone.now())
    gpus = [Gpu.objects.create(node=node, index=i, uuid=f"GPU-w{i}", gpu_type=v100) for i in range(24)]

    def queries_to_place(count, first_gpu):
        jobs = [make_job(alice, resnet50) for _ in range(count)]
        preempted = make_job(alice, resnet50, "running")
        hold(preempted, gpus[first_gpu + count])
        choice = decision([place(job, gpus[first_gpu + n]) for n, job in enumerate(jobs)],
                          {str(preempted.pk): "Room for others."})
        run = SolveRun.objects.create(solver="ilp", trigger="manual")
        with CaptureQueriesContext(connection) as queries:
            services._apply(choice, run, timezone.now())
        assert Job.objects.filter(pk__in=[j.pk for j in jobs], state="placed").count() == count
        return len(queries)

    assert queries_to_place(3, 0) == queries_to_place(12, 4)


def test_a_job_whose_state_no_longer_allows_the_move_is_skipped_and_the_others_applied(cluster, alice, resnet50):
    """The lifecycle check runs on each locked row: a refused move leaves that job as it was."""
    done = make_job(alice, resnet50, "running")
    hold(done, cluster[0])
    services.job_transition(job=done, to="succeeded", reason="done")
    fresh = make_job(alice, resnet50)
    run = SolveRun.objects.create(solver="ilp", trigger="manual")
    services._apply(decision([place(fresh, cluster[1])], {str(done.pk): "Room for others."}), run, timezone.now())
    done.refresh_from_db()
    assert (done.state, done.state_reason) == ("succeeded", "done")
    assert not Allocation.objects.filter(job=done, end__isnull=True).exists()
    assert Job.objects.get(pk=fresh.pk).state == "placed"
