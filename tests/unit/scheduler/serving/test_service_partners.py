"""The release of a replica's training partners before a solve (optimizer/service_partners.py):
only where their current group misses the replica's T_min, and a replica too slow alone."""
from dataclasses import replace

from scheduler.optimizer import get_solver
from scheduler.optimizer.service_partners import outgrown, release_outgrown

from ..optimizer.factory import TablePredictions, gpu_type, job, node, problem

SERVE, TRAIN = "serve", "train"


def _pair(replica_tmin: float, *, alone: float = 10.0):
    """Training job 1 and replica 2 share n-0; the replica runs `alone` steps/s by itself, half
    of it beside the training job."""
    taus = {(SERVE, "g", 1, True): alone, (TRAIN, "g", 1, True): 10.0}
    rhos = {(SERVE, TRAIN, "g"): 0.5, (TRAIN, SERVE, "g"): 0.5}
    training = job(1, TRAIN, tmin=2.0, current=(("n-0",), ("2",)))
    replica = replace(job(2, SERVE, tmin=replica_tmin, current=(("n-0",), ("1",))), service=True)
    return problem([training, replica], node("g", "n", 2), [gpu_type("g", tdp=300)], TablePredictions(taus, rhos),
                   theta=2)


def test_nothing_is_released_while_the_pair_meets_the_replicas_tmin():
    p = _pair(4.0)
    assert outgrown(p) == set() and release_outgrown(p) is p


def test_a_pair_below_the_replicas_tmin_releases_the_training_partner_only():
    released = release_outgrown(_pair(6.0))
    training, replica = released.jobs
    assert training.current is None and not training.pinned and training.move_penalty_w is None
    assert replica.current.gpu_ids == ("n-0",) and replica.current.partners == ()
    plan = get_solver("ilp").solve(released)
    assert plan.placements["2"].gpu_ids == ("n-0",) and plan.placements["1"].gpu_ids == ("n-1",)


def test_a_replica_too_slow_alone_where_it_runs_is_released_too():
    assert outgrown(_pair(6.0, alone=5.0)) == {"1", "2"}


def test_a_training_pair_is_never_released():
    p = _pair(6.0)
    p = replace(p, jobs=tuple(replace(j, service=False) for j in p.jobs))
    assert outgrown(p) == set()


def test_a_replica_that_runs_alone_loses_its_partner_though_the_pair_meets_its_tmin():
    """Its service's SLO is out of reach (JobSpec.alone): the partner that its capped T_min
    allows would hold it at half its speed, so the partner goes and no pair is offered again."""
    p = _pair(4.0)
    p = replace(p, jobs=tuple(replace(j, alone=j.service) for j in p.jobs))
    assert outgrown(p) == {"1"}
    released = release_outgrown(p)
    plan = get_solver("ilp").solve(released)
    assert plan.placements["2"].gpu_ids == ("n-0",) and plan.placements["2"].partners == ()
    assert plan.placements["1"].gpu_ids == ("n-1",)


def test_a_waiting_replica_that_runs_alone_is_offered_no_shared_gpu():
    """One GPU and a training job on it: a replica that may share would join it; one that runs
    alone waits rather than share (the training job keeps its GPU: a running job is not moved
    for a replica that cannot meet its SLO anyway)."""
    taus = {(SERVE, "g", 1, True): 10.0, (TRAIN, "g", 1, True): 10.0}
    rhos = {(SERVE, TRAIN, "g"): 0.5, (TRAIN, SERVE, "g"): 0.5}
    training = job(1, TRAIN, tmin=2.0, current=(("n-0",), ()))
    replica = replace(job(2, SERVE, tmin=4.0), service=True)
    shared = problem([training, replica], node("g", "n", 1), [gpu_type("g", tdp=300)],
                     TablePredictions(taus, rhos), theta=2)
    plan = get_solver("ilp").solve(shared)
    assert plan.placements["2"].gpu_ids == ("n-0",) and plan.placements["2"].partners == ("1",)
    alone = replace(shared, jobs=(training, replace(replica, alone=True)))
    plan = get_solver("ilp").solve(alone)
    assert set(plan.placements) == {"1"} and plan.placements["1"].partners == ()
