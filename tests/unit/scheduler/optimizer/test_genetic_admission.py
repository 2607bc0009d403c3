"""The genetic algorithm admits what the ILP admits: its rounded-relaxation seed, and the
algorithm on a benchmark instance (within 3% of the ILP's power at the same admission)."""
from dataclasses import replace

import pytest

from scheduler.optimizer import bench, get_solver
from scheduler.optimizer.catalog_predictions import CatalogPredictions
from scheduler.optimizer.cpu_clock import cpu_now
from scheduler.optimizer.greedy import cheapest, greedy_choices
from scheduler.optimizer.ilp_model import admitted_by_level
from scheduler.optimizer.instance import compile_instance
from scheduler.optimizer.problem import SolverSettings
from scheduler.optimizer.relaxation import rounded_choices

from .factory import TablePredictions, gpu_type, job, node, problem


def greedy_trap():
    """X (100 W) and Y (300 W), one GPU each. A runs on either, B only on X: the greedy gives A
    the cheap X and B waits; the relaxation puts A on Y and B on X."""
    cheap, dear = gpu_type("x", tdp=100), gpu_type("y", tdp=300)
    preds = TablePredictions(taus={("a", "x", 1, True): 10, ("a", "y", 1, True): 10, ("b", "x", 1, True): 10})
    return problem([job(1, "a", tmin=5), job(2, "b", tmin=5)], node("x", "nx", 1) + node("y", "ny", 1), [cheap, dear],
                   preds, theta=1)


def test_the_rounded_relaxation_admits_what_the_greedy_leaves_out():
    inst = compile_instance(greedy_trap())
    assert sum(c is not None for c in greedy_choices(inst, inst.admission_order(), cheapest)) == 1
    choices = rounded_choices(inst, cpu_now() + 5)
    assert all(c is not None for c in choices)
    assert inst.all_options[choices[0][1]].gpu_type == "y" and inst.all_options[choices[1][1]].gpu_type == "x"


def test_no_time_left_means_no_relaxed_seed_and_the_genetic_algorithm_still_decides():
    inst = compile_instance(greedy_trap())
    assert rounded_choices(inst, cpu_now() - 1) is None
    result = get_solver("genetic").solve(greedy_trap())
    assert set(result.placements) | set(result.reasons) == {"1", "2"}


@pytest.fixture(scope="module")
def instance_1024():
    from catalog.gavel import read_throughputs

    settings = SolverSettings(adaptive_weight=False, migration_cost_w=0.0, seed=7, time_limit_s=30.0)
    return bench.make_instance(1024, CatalogPredictions.from_gavel(read_throughputs()), 7, settings)


def test_the_relaxed_seed_reaches_the_ilps_admission_on_the_1024_gpu_benchmark(instance_1024):
    inst = compile_instance(instance_1024)
    ilp = get_solver("ilp").solve(instance_1024)
    seed = rounded_choices(inst, cpu_now() + 30)
    priority = {j.id: j.priority for j in instance_1024.jobs}
    ilp_levels = {}
    for job_id in ilp.placements:
        ilp_levels[priority[job_id]] = ilp_levels.get(priority[job_id], 0.0) + 1
    assert admitted_by_level(inst, seed) == ilp_levels


def test_genetic_admits_like_the_ilp_and_draws_within_3_percent_on_the_1024_gpu_benchmark(instance_1024):
    ilp = get_solver("ilp").solve(instance_1024)
    genetic = get_solver("genetic").solve(
        replace(instance_1024, settings=replace(instance_1024.settings, genetic_generations=2))
    )
    priority = {j.id: j.priority for j in instance_1024.jobs}

    def levels(result):
        return sorted((priority[i] for i in result.placements), reverse=True)

    assert levels(genetic) == levels(ilp)
    assert genetic.power_w <= ilp.power_w * 1.03
