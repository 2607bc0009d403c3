"""A replica's GPU priced at what training loses by it (replica_rent.py), checked by hand: per
type the mean of what the training jobs whose cheapest type it is would cost more on their next
cheapest, times the share of its GPUs they need; the ILP then gives the replica the type
training needs least."""
from dataclasses import replace

import pytest

from scheduler.optimizer import get_solver
from scheduler.optimizer.instance import compile_instance
from scheduler.optimizer.replica_rent import replica_rent

from .factory import TablePredictions, gpu_type, job, node, problem

TYPES = [gpu_type("p100", tdp=250), gpu_type("v100", tdp=300)]


def test_a_types_rent_is_what_the_jobs_whose_cheapest_type_it_is_cost_more_on_their_next():
    alone = [{"v100": (200.0, 1), "p100": (230.0, 1)}, {"v100": (100.0, 1), "p100": (150.0, 1), "k80": (140.0, 1)}]
    # V100: the mean of 30 and 40 (the second job's next cheapest is the K80); two of two GPUs wanted.
    assert replica_rent(alone, {"v100": 2, "p100": 2, "k80": 2}) == pytest.approx({"v100": 35.0, "p100": 0.0,
                                                                                  "k80": 0.0})


def test_the_rent_is_scaled_by_the_share_of_the_types_gpus_training_needs():
    one = [{"v100": (200.0, 1), "p100": (230.0, 1)}]
    assert replica_rent(one, {"v100": 4, "p100": 4})["v100"] == pytest.approx(30.0 / 4)
    # A job of two GPUs wants two of the four; its cost is per GPU.
    two = [{"v100": (200.0, 2), "p100": (230.0, 2)}]
    assert replica_rent(two, {"v100": 4, "p100": 4})["v100"] == pytest.approx(30.0 / 2)


def test_a_job_with_no_second_type_asks_no_rent_nor_a_type_the_cluster_lacks():
    assert replica_rent([{"v100": (200.0, 1)}], {"v100": 1, "p100": 1}) == {"v100": 0.0, "p100": 0.0}
    assert replica_rent([{"v100": (200.0, 1), "a100": (100.0, 1)}], {"v100": 1}) == {"v100": 0.0}


def _replica(id, tmin=4.0):
    return replace(job(id, "serve", tmin=tmin, priority=1), service=True)


def _problem(jobs):
    """One P100 (250 W), one V100 (300 W); surplus throughput worth 100 W per T_min (as in
    `simulate`). Training ("train", T_min 1.5): 10 steps/s on a V100 (30 J/step), 2 on a P100
    (125 J/step). The replica ("serve", T_min 4): 5 steps/s on a P100, 10 on a V100."""
    taus = {("train", "v100", 1, True): 10.0, ("train", "p100", 1, True): 2.0,
            ("serve", "p100", 1, True): 5.0, ("serve", "v100", 1, True): 10.0}
    return problem(jobs, node("p100", "a", 1) + node("v100", "b", 1), TYPES, TablePredictions(taus), theta=1,
                   throughput_value_w=100.0)


def test_the_replica_takes_the_p100_and_leaves_the_v100_to_training():
    plan = get_solver("ilp").solve(_problem([job(1, "train", tmin=1.5), _replica(2)]))
    assert plan.placements["2"].gpu_type == "p100" and plan.placements["1"].gpu_type == "v100"


def test_without_the_rent_the_objective_gave_the_replica_the_v100(monkeypatch):
    """Replica on the V100 (300 W less 100 of surplus) and training on the P100 (250 less 33) cost
    417, the other way round (250 less 25, and 200) 425; the rent, training's 17 more on the P100,
    turns it: the rule is what decides the test above."""
    monkeypatch.setattr("scheduler.optimizer.instance.replica_rent", lambda *args: {})
    plan = get_solver("ilp").solve(_problem([job(1, "train", tmin=1.5), _replica(2)]))
    assert plan.placements["2"].gpu_type == "v100" and plan.placements["1"].gpu_type == "p100"


def test_only_a_replicas_options_carry_the_rent():
    p = _problem([job(1, "train", tmin=1.5), _replica(2)])
    inst = compile_instance(p)
    plain = compile_instance(replace(p, jobs=(p.jobs[0], replace(p.jobs[1], service=False))))
    cost = {(inst.jobs[o.job].id, o.gpu_type): o.cost for o in inst.all_options}
    before = {(plain.jobs[o.job].id, o.gpu_type): o.cost for o in plain.all_options}
    assert cost[("1", "v100")] == before[("1", "v100")] and cost[("1", "p100")] == before[("1", "p100")]
    assert cost[("2", "v100")] == pytest.approx(before[("2", "v100")] + (250 - 100 / 3) - 200)
    assert cost[("2", "p100")] == before[("2", "p100")]


def test_replicas_alone_pay_no_rent():
    p = _problem([_replica(1), _replica(2)])
    plain = compile_instance(replace(p, jobs=tuple(replace(j, service=False) for j in p.jobs)))
    assert [o.cost for o in compile_instance(p).all_options] == [o.cost for o in plain.all_options]
