"""Groups of three or more jobs on one GPU (theta > 2) in the simulated cluster: the true
rate from the pairs (telemetry.agent.colocation.group_fraction), the power of the shared GPU, a
finishing member leaving its group, and no group observation fed to the predictors."""
import pytest

from catalog.measurement_record import MeasurementRecord
from scheduler.optimizer import registry
from scheduler.optimizer.problem import Placement, Plan
from scheduler.simulation.cluster import build_gpus, gpu_types
from scheduler.simulation.engine import Simulation
from scheduler.simulation.jobs import SimJob
from scheduler.simulation.policies import Policy
from scheduler.simulation.scenario import Scenario

from .factory import truth

#: Alone: A 10, B 20, C 40 steps/s on a V100. Pairs as fractions of alone:
#: A next to B 0.5, next to C 0.25; B next to A 0.5, next to C 0.5; C next to A 0.5, next to B 0.25.
ASYMMETRIC = [
    MeasurementRecord(workload=workload, gpu_type="v100", partner=partner, throughput=throughput)
    for workload, partner, throughput in (
        ("A", None, 10.0), ("B", None, 20.0), ("C", None, 40.0),
        ("A", "B", 5.0), ("A", "C", 2.5), ("B", "A", 10.0), ("B", "C", 10.0), ("C", "A", 20.0), ("C", "B", 10.0),
    )
]


def test_a_member_of_a_group_of_three_runs_at_group_fraction_of_its_pairs():
    """A next to B and C: slowdowns 1 + 3 add up, 1 / (1 + 4) = 0.2 of its 10 steps/s. The
    pairs keep their measured values."""
    t = truth(ASYMMETRIC)
    assert t.shared_throughput("A", ("B", "C"), "v100") == pytest.approx(2.0)
    assert t.shared_throughput("B", ("A", "C"), "v100") == pytest.approx(20.0 / 3)
    assert t.shared_throughput("A", ("B",), "v100") == 5.0 and t.shared_throughput("A", ("C",), "v100") == 2.5


def test_a_shared_gpu_draws_power_at_its_members_summed_scaled_utilization():
    """Busy utilization 0.9 each. Pair A+B: 0.9 x 0.5 + 0.9 x 0.5, as the pair formula always
    gave. Group A+B+C: A 0.9 x 0.2, B 0.9 x 1/3, C 0.9 x 1/(1 + 1 + 3) = 0.2: 0.66 in all."""
    t, spec = truth(ASYMMETRIC), gpu_types(["v100"])["v100"]
    assert t.gpu_power_shared(spec, ("A", "B")) == spec.power_curve(0.9 * 0.5 + 0.9 * 0.5)
    assert t.gpu_power_shared(spec, ("A", "B", "C")) == pytest.approx(spec.power_curve(0.66))
    no_slowdown = [MeasurementRecord(workload=w, gpu_type="v100", partner=p, throughput=10.0)
                   for w in "AB" for p in (None, "A", "B")]
    assert truth(no_slowdown).gpu_power_shared(spec, ("A", "B", "B")) == spec.tdp_w  # 2.7, capped at 1


class OneGroupSolver:
    """Every job of the round shares the first GPU with all the others (a stand-in for a
    solver that forms groups, which the optimiser does only from theta > 2)."""

    def solve(self, problem):
        gpu = problem.gpus[0].id
        ids = [job.id for job in problem.jobs]
        placements = {
            i: Placement(i, "v100", (gpu,), True, tuple(p for p in ids if p != i), 1.0, 100.0) for i in ids
        }
        return Plan("one_group", placements, {}, 0.0, 0.0, "optimal", 1.0, 0.0)


class Observations:
    """A learning policy's predictions that only record what telemetry reports."""

    def __init__(self):
        self.seen = []

    def observe(self, workload, gpu_type, num_gpus, consolidated, throughput, partner=None):
        self.seen.append((workload, partner, throughput))
        return False

    def observations(self, workload):
        return 0

    def throughput(self, *args):
        return None


def test_a_finished_member_leaves_its_group_and_only_pair_observations_reach_the_predictors(monkeypatch):
    """Three workloads at 10 steps/s alone, 0.5 next to any one other: 10/3 steps/s each in the
    group. a (1000 steps) ends at 300 s, when b and c have 1000 steps left; as a pair they run
    at 5 steps/s and end at 500 s (at 10/3, had a stayed in their partners, 600 s). The group's
    300 s are no observation; the pair's are, at the pair's rate."""
    rows = [MeasurementRecord(workload=w, gpu_type="v100", throughput=10.0) for w in "ABC"]
    rows += [MeasurementRecord(workload=w, gpu_type="v100", partner=p, throughput=5.0)
             for w in "ABC" for p in "ABC" if p != w]
    monkeypatch.setitem(registry.ENTRIES, "one_group", registry.SolverEntry("one_group", "One group", OneGroupSolver))
    jobs = [SimJob("a", "A", 0.0, 1, 1000.0, 1.0), SimJob("b", "B", 0.0, 1, 2000.0, 1.0),
            SimJob("c", "C", 0.0, 1, 2000.0, 1.0)]
    sc = Scenario(jobs=tuple(jobs), gpus=build_gpus((("v100", 1),)), gpu_types=gpu_types(["v100"]), horizon_s=3600.0)
    predictions = Observations()
    result = Simulation(sc, truth(rows, noise=0.0), Policy("one_group", "one_group", "learned"), predictions).run()
    done = {state.job.id: state.done_at for state in result.jobs}
    assert done == {"a": pytest.approx(300.0), "b": pytest.approx(500.0), "c": pytest.approx(500.0)}
    assert result.migrations == 0
    assert predictions.seen and all(partner is not None and seen == pytest.approx(5.0)
                                    for _, partner, seen in predictions.seen)
    assert {(workload, partner) for workload, partner, _ in predictions.seen} <= {("B", "C"), ("C", "B")}
