"""The fairness weight: a larger weight never lowers the least-served tenant's share (the
quantity the power phase prices), and on a hand-checked instance raises Jain's index."""
import pytest
from hypothesis import given, settings as hsettings, strategies as st

from scheduler.optimizer import get_solver
from scheduler.optimizer.fairness import fairness_price_w, least_share
from scheduler.optimizer.instance import compile_instance

from .factory import TablePredictions, gpu_type, job, node, problem

SLOW, FAST = gpu_type("slow", tdp=100), gpu_type("fast", tdp=300)


def jain(values):
    return sum(values) ** 2 / (len(values) * sum(v * v for v in values))


def tenant_shares(p, result):
    shares = {}
    for j in p.jobs:
        placement = result.placements.get(j.id)
        shares.setdefault(j.tenant, []).append(placement.predicted_throughput / j.min_throughput if placement else 0.0)
    return [sum(s) / len(s) for s in shares.values()]


def lopsided(weight, solver="ilp"):
    """Two slow GPUs (100 W), one fast (300 W); mean TDP 500/3 W. Job 1 (tenant t): 10/s on
    slow, 40/s on fast; job 2 (tenant u): 30/s on slow, 40/s on fast; T_min 10 each.
    Both on slow: 200 W, shares t 1, u 3 (Jain 0.8). Job 1 on fast instead: 400 W, shares 4
    and 3 (Jain 0.98): the least share rises by 2 for 200 W more, which pays when
    2 * weight * 500/3 > 200, i.e. weight > 0.6."""
    preds = TablePredictions(taus={
        ("a", "slow", 1, True): 10, ("a", "fast", 1, True): 40, ("b", "slow", 1, True): 30, ("b", "fast", 1, True): 40,
    })
    jobs = [job(1, "a", tenant="t", tmin=10), job(2, "b", tenant="u", tmin=10)]
    p = problem(jobs, node("slow", "s", 2) + node("fast", "f", 1), [SLOW, FAST], preds, fairness_weight=weight, gap=0.0)
    return p, get_solver(solver).solve(p)


@pytest.mark.parametrize("solver", ["ilp", "genetic"])
def test_a_larger_weight_gives_a_jain_index_no_lower_hand_checked(solver):
    results = {w: lopsided(w, solver) for w in (0.0, 0.5, 2.0)}
    indices = [jain(tenant_shares(p, r)) for p, r in results.values()]
    assert indices[0] == pytest.approx(0.8) and indices[1] == pytest.approx(0.8) and indices[2] == pytest.approx(0.98)
    assert results[0.5][1].power_w == pytest.approx(200) and results[2.0][1].power_w == pytest.approx(400)
    assert results[2.0][1].placements["1"].gpu_type == "fast"


def test_the_weight_is_priced_in_gpus_of_average_power():
    p, _ = lopsided(1.5)
    assert fairness_price_w(compile_instance(p)) == pytest.approx(1.5 * 500 / 3)
    assert fairness_price_w(compile_instance(lopsided(0.0)[0])) == 0.0


@st.composite
def instances(draw):
    """Random small clusters and jobs of three tenants; throughputs drawn per workload and type."""
    workloads = ["a", "b", "c"]
    taus = {(w, t, k, True): draw(st.integers(1, 40)) * k for w in workloads for t in ("slow", "fast") for k in (1, 2)}
    jobs = [
        job(n, draw(st.sampled_from(workloads)), tenant=draw(st.sampled_from("tuv")), tmin=draw(st.integers(1, 30)),
            dj=draw(st.sampled_from((1, 2))), priority=draw(st.integers(0, 1)))
        for n in range(draw(st.integers(2, 7)))
    ]
    gpus = node("slow", "s", draw(st.integers(1, 4))) + node("fast", "f", draw(st.integers(1, 2)))
    return jobs, gpus, TablePredictions(taus=taus)


@hsettings(max_examples=25, deadline=None)
# Weights well apart: HiGHS optima are exact to tolerances.
@given(instances(), st.floats(0.1, 1.0), st.floats(1.5, 4.0))
def test_a_larger_weight_never_lowers_the_least_served_tenants_share(case, low, factor):
    """At the optimum (gap 0) of the power phase, minimising P - lambda z with a larger lambda
    never gives a smaller z; the admission values are the same for any positive weight."""
    jobs, gpus, preds = case
    shares = []
    for weight in (low, low * factor):
        p = problem(jobs, gpus, [SLOW, FAST], preds, fairness_weight=weight, gap=0.0, theta=1)
        result = get_solver("ilp").solve(p)
        inst = compile_instance(p)
        index = {j.id: n for n, j in enumerate(inst.jobs)}
        choices = [None] * len(inst.jobs)
        for job_id, placement in result.placements.items():
            j = index[job_id]
            choices[j] = next(("o", i) for i in inst.job_options[j]
                              if inst.all_options[i].gpu_type == placement.gpu_type
                              and inst.all_options[i].num_gpus == placement.num_gpus)
        shares.append(least_share(inst, choices))
    assert shares[1] >= shares[0] - 1e-6
