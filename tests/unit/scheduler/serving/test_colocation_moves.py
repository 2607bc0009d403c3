"""Co-location under the latency SLO with the real ILP: when a replica's T_min rises so that its
shared GPU no longer meets it, the round moves the training partner away, not the replica; and
SolverConfig.services_first puts replicas ahead of training (off: not)."""
from dataclasses import replace

import pytest
from django.utils import timezone

from scheduler.lifecycle import JobState
from scheduler.models import Allocation, Job, SolverConfig
from scheduler.optimizer import get_solver
from scheduler.optimizer.instance import compile_instance
from scheduler.optimizer.keep_work import SERVICE_MOVE_FACTOR, move_penalty_w, service_move_penalty_w
from scheduler.problem_source import problem_from_database
from scheduler.services import job_transition
from scheduler.serving.services import service_create

from ..optimizer.factory import TablePredictions, gpu_type, job, node, problem
from ..optimizer.rounds import with_work, work_of

SERVE, TRAIN = "serve", "train"


def _shared_gpu(replica_tmin: float, *, service: bool = True):
    """Two GPUs; training job 1 and replica 2 share n-0. Alone each runs 10 steps/s; together
    each keeps half. Job 1's id sorts first: without the replica rules, it would keep the GPU."""
    taus = {(w, "g", 1, True): 10.0 for w in (SERVE, TRAIN)}
    rhos = {(SERVE, TRAIN, "g"): 0.5, (TRAIN, SERVE, "g"): 0.5}
    training = job(1, TRAIN, tmin=2.0, current=(("n-0",), ("2",)))
    replica = replace(job(2, SERVE, tmin=replica_tmin, current=(("n-0",), ("1",))), service=service)
    p = problem([training, replica], node("g", "n", 2), [gpu_type("g", tdp=300)], TablePredictions(taus, rhos),
                theta=2)
    shared = type("Shared", (), {"predicted_throughput": 5.0, "predicted_power_w": 300.0, "num_gpus": 1})
    return with_work(p, {"1": work_of(shared), "2": work_of(shared)})


def test_while_the_pair_meets_the_replicas_tmin_nothing_moves():
    plan = get_solver("ilp").solve(_shared_gpu(4.0))
    assert plan.placements["1"].gpu_ids == plan.placements["2"].gpu_ids == ("n-0",)


def test_when_the_replicas_tmin_rises_above_the_pair_the_training_partner_moves_away():
    plan = get_solver("ilp").solve(_shared_gpu(6.0))
    assert plan.placements["2"].gpu_ids == ("n-0",) and plan.placements["2"].partners == ()
    assert plan.placements["1"].gpu_ids == ("n-1",)


def test_a_training_job_below_its_tmin_would_have_kept_the_shared_gpu():
    """The rule is the replica's: the same pair of training jobs stays together below T_min
    (stopping a running group loses its work: docs/optimization.md)."""
    plan = get_solver("ilp").solve(_shared_gpu(6.0, service=False))
    assert plan.placements["1"].gpu_ids == plan.placements["2"].gpu_ids == ("n-0",)


def test_a_replicas_move_is_priced_above_a_training_jobs_of_the_same_restart():
    p = _shared_gpu(6.0)
    training, replica = p.jobs
    assert replica.move_penalty_w > training.move_penalty_w
    alone = type("Alone", (), {"predicted_throughput": 5.0, "predicted_power_w": 300.0, "num_gpus": 1})
    work = replace(work_of(alone), steps_since_checkpoint=0.0, remaining_steps=None)  # nothing to redo
    expected = SERVICE_MOVE_FACTOR * move_penalty_w(work, p.settings)
    assert service_move_penalty_w(work, p.settings) == pytest.approx(expected)


@pytest.fixture
def busy_v100s(alice, measured, resnet50):
    """Four training jobs placed on the four V100s, each needing a V100 (8 steps/s; a K80 gives 4)."""
    for gpu in [gpu for gpu in measured if gpu.gpu_type.name == "v100"]:
        training = Job.objects.create(owner=alice, tenant=alice.membership.tenant, workload=resnet50,
                                      min_throughput=8.0, max_gpus=1, pending_reason="waiting")
        job_transition(job=training, to=JobState.PLACED.value, reason="placed")
        Allocation.objects.create(job=training, gpu=gpu, start=timezone.now(), predicted_throughput=10.0)


def _round_with(services_first: bool, alice, resnet50):
    config = SolverConfig.load()
    config.services_first = services_first
    config.save()
    # 1000 requests/s in batches of 64 within 500 ms: about 8 steps/s, a V100's work.
    service = service_create(owner=alice, data={"name": "ranker", "workload": resnet50, "latency_bound_ms": 500.0,
                                                "batch_size": 64, "expected_rate_rps": 450.0})
    replica = service.replicas.get()
    assert replica.min_throughput > 4.0  # no K80 serves it
    p = problem_from_database(SolverConfig.load())
    return str(replica.pk), p, get_solver("ilp").solve(p)


@pytest.mark.django_db
def test_with_services_first_a_waiting_replica_preempts_a_placed_training_job(alice, resnet50, busy_v100s):
    replica, p, plan = _round_with(True, alice, resnet50)
    specs = {spec.id: spec for spec in p.jobs}
    assert specs[replica].service and all(specs[replica].priority > s.priority for s in p.jobs if not s.service)
    assert replica in plan.placements and len(plan.reasons) == 1


@pytest.mark.django_db
def test_with_services_first_off_the_replica_is_not_ahead(alice, resnet50, busy_v100s):
    replica, p, plan = _round_with(False, alice, resnet50)
    assert replica not in plan.placements and set(plan.reasons) == {replica}


def _replica_and_two_waiting_training_jobs():
    """Three GPUs; replica 1 (T_min 4) runs alone on n-0, training jobs 2 and 3 (T_min 2) wait.
    Alone each runs 10 steps/s; any two together each keep half (5). The replica's id sorts
    first, so it is the first of the three equally dear jobs to take a partner."""
    workloads = (SERVE, TRAIN)
    taus = {(w, "g", 1, True): 10.0 for w in workloads}
    rhos = {(w, v, "g"): 0.5 for w in workloads for v in workloads}
    replica = replace(job(1, SERVE, tmin=4.0, current=(("n-0",), ())), service=True)
    p = problem([replica, job(2, TRAIN, tmin=2.0), job(3, TRAIN, tmin=2.0)], node("g", "n", 3),
                [gpu_type("g", tdp=300)], TablePredictions(taus, rhos), theta=2)
    alone = type("Alone", (), {"predicted_throughput": 10.0, "predicted_power_w": 300.0, "num_gpus": 1})
    return with_work(p, {"1": work_of(alone)})


def test_a_training_job_a_replica_takes_as_partner_still_gets_a_training_partner():
    """The candidates: the training pair {2, 3}, and the replica's pair with one of them (before,
    the replica took job 3 and job 2 was left with no partner at all)."""
    p = _replica_and_two_waiting_training_jobs()
    inst = compile_instance(p)
    pairs = {tuple(sorted(inst.jobs[m].id for m in g.members)) for g in inst.groups}
    assert ("2", "3") in pairs
    assert [pair for pair in pairs if "1" in pair] == [("1", "3")]


def test_the_training_jobs_share_a_gpu_and_the_replica_keeps_its_own():
    """Hand-checked costs (weight 1, no value on surplus throughput, 300 W a GPU busy alone or
    shared): the replica alone on n-0 (300) and 2 + 3 sharing n-1 (300) cost 600; the replica
    sharing with 3 (300, plus the replica's move: 1.5 x 68 W, test_keep_work) and 2 alone
    (300) cost 702; all three alone 900."""
    plan = get_solver("ilp").solve(_replica_and_two_waiting_training_jobs())
    assert plan.placements["1"].gpu_ids == ("n-0",) and plan.placements["1"].partners == ()
    assert plan.placements["2"].gpu_ids == plan.placements["3"].gpu_ids != ("n-0",)


def _candidate_pairs(replica_rho: float) -> set[tuple[str, ...]]:
    """Replicas 1 and 2 (T_min 4) and training jobs 3 and 4 (T_min 2), all waiting, on two GPUs:
    alone each runs 10 steps/s, two together each keep half, two replicas `replica_rho` each."""
    workloads = (SERVE, TRAIN)
    taus = {(w, "g", 1, True): 10.0 for w in workloads}
    rhos = {(w, v, "g"): 0.5 for w in workloads for v in workloads} | {(SERVE, SERVE, "g"): replica_rho}
    jobs = [replace(job(1, SERVE, tmin=4.0), service=True), replace(job(2, SERVE, tmin=4.0), service=True),
            job(3, TRAIN, tmin=2.0), job(4, TRAIN, tmin=2.0)]
    inst = compile_instance(problem(jobs, node("g", "n", 2), [gpu_type("g", tdp=300)],
                                    TablePredictions(taus, rhos), theta=2))
    return {tuple(sorted(inst.jobs[m].id for m in g.members)) for g in inst.groups}


def test_two_waiting_replicas_still_pair_with_each_other():
    assert _candidate_pairs(0.5) == {("3", "4"), ("1", "2")}


def test_a_training_job_is_the_partner_of_one_replica_at_most():
    """Two replicas together keep 3 steps/s each, below their T_min: replica 1 takes training
    job 4 (the tightest of the equal ones) beside its training pair, and replica 2 the other,
    job 3, not job 4 again."""
    assert _candidate_pairs(0.3) == {("3", "4"), ("1", "4"), ("2", "3")}
