"""A replica's GPU priced at what training loses by it (replica_rent.py), checked by hand: per
type the mean loss of the training jobs whose most efficient type it is, times the share of
its GPUs they need; the ILP then gives the replica the type training needs least."""
from dataclasses import replace

import pytest

from scheduler.optimizer import get_solver
from scheduler.optimizer.instance import compile_instance, power_per_gpu_alone
from scheduler.optimizer.replica_rent import replica_rent_w

from .factory import TablePredictions, gpu_type, job, node, problem

TYPES = [gpu_type("p100", tdp=250), gpu_type("v100", tdp=300)]


def _replica(id, tmin=4.0):
    return replace(job(id, "serve", tmin=tmin, priority=1), service=True)


def _problem(jobs, *, p100=1, v100=1):
    """Training ("train") alone: 10 steps/s on a V100 (30 J/step at 300 W), 2 on a P100 (125 J/step
    at 250 W). The replica ("serve"): 5 steps/s on a P100, 10 on a V100. Surplus throughput is
    worth 100 W per T_min (as in `simulate`)."""
    taus = {("train", "v100", 1, True): 10.0, ("train", "p100", 1, True): 2.0,
                    ("serve", "p100", 1, True): 5.0, ("serve", "v100", 1, True): 10.0}
    return problem(jobs, node("p100", "a", p100) + node("v100", "b", v100), TYPES, TablePredictions(taus), theta=1,
                   throughput_value_w=100.0)


def _rent(p):
    return replica_rent_w(p, p.jobs, {t: sum(g.gpu_type == t for g in p.gpus) for t in p.gpu_types},
                          lambda w, t: power_per_gpu_alone(p, w, t), lambda j, t: True)


def test_a_types_rent_is_what_the_training_job_whose_best_type_it_is_loses_on_its_next_best():
    # (125 - 30) J/step x 10 steps/s = 950 W on the V100, the training job's best; nobody's best is the P100.
    assert _rent(_problem([job(1, "train"), _replica(2)])) == pytest.approx({"v100": 950.0, "p100": 0.0})


def test_the_rent_is_scaled_by_the_share_of_the_types_gpus_training_needs():
    # One V100 of four wanted by training: a replica there displaces it a quarter of the time.
    assert _rent(_problem([job(1, "train"), _replica(2)], v100=4))["v100"] == pytest.approx(950.0 / 4)
    two = _rent(_problem([job(1, "train"), job(3, "train"), _replica(2)], v100=4))
    assert two["v100"] == pytest.approx(950.0 / 2)


def test_a_training_job_with_no_second_type_meeting_its_tmin_asks_no_rent():
    # At T_min 3 the P100 (2 steps/s) is no place for it: nothing cheaper to lose to.
    assert _rent(_problem([job(1, "train", tmin=3.0), _replica(2)])) == {"v100": 0.0, "p100": 0.0}


def test_replicas_pay_no_rent_to_each_other():
    assert _rent(_problem([_replica(1), _replica(2)])) == {"v100": 0.0, "p100": 0.0}


def test_the_replica_takes_the_p100_and_leaves_the_v100_to_training():
    plan = get_solver("ilp").solve(_problem([job(1, "train"), _replica(2)]))
    assert plan.placements["2"].gpu_type == "p100" and plan.placements["1"].gpu_type == "v100"


def test_without_the_rent_the_objective_gave_the_replica_the_v100(monkeypatch):
    """The power objective alone: replica on the V100 (300 W less 100 W of surplus) and training on
    the P100 (250 less 100) cost 350 W, the other way round 425 W (the replica's surplus on the
    P100 is worth 25 W): the rule is what decides the test above."""
    monkeypatch.setattr("scheduler.optimizer.instance.replica_rent_w", lambda *args: {})
    plan = get_solver("ilp").solve(_problem([job(1, "train"), _replica(2)]))
    assert plan.placements["2"].gpu_type == "v100" and plan.placements["1"].gpu_type == "p100"


def test_only_a_replicas_options_carry_the_rent():
    p = _problem([job(1, "train"), _replica(2)])
    inst = compile_instance(p)
    plain = compile_instance(replace(p, jobs=(p.jobs[0], replace(p.jobs[1], service=False))))
    cost = {(o.job, o.gpu_type): o.cost for o in inst.all_options}
    before = {(o.job, o.gpu_type): o.cost for o in plain.all_options}
    training = next(j for j, x in enumerate(inst.jobs) if x.id == "1")
    replica = 1 - training
    assert cost[(training, "v100")] == before[(training, "v100")]
    assert cost[(replica, "v100")] == pytest.approx(before[(replica, "v100")] + inst.weight * 950.0)
    assert cost[(replica, "p100")] == before[(replica, "p100")]
