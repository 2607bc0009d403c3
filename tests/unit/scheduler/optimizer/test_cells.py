"""The cells coordinator: routing by the whole cluster's admission decision, and the
co-location matching it fixes for every cell."""
import json
from collections import Counter
from dataclasses import replace

from scheduler.optimizer import get_solver
from scheduler.optimizer.serialization import problem_from_dict, problem_to_dict

from .factory import TablePredictions, gpu_type, job, node, problem

EFF, OLD = gpu_type("eff", tdp=100), gpu_type("old", tdp=300)


def in_cell(gpus, cell):
    return [replace(g, cell=cell) for g in gpus]


def test_a_flexible_job_is_routed_where_it_leaves_the_scarce_type_to_jobs_that_need_it():
    """Cell a: one eff GPU. Cell b: one eff and one old GPU. X (priority 1) runs on eff or
    old, Y and Z (priority 0) only on eff. The global optimum admits all three: X on old, Y
    and Z on the two eff GPUs. Routing by the room of the cheapest type sent X and Z to a
    (both want eff, a was first) and Y to b: X took a's eff GPU, Z waited, and the second
    chance, over b's free old GPU, could not run it."""
    preds = TablePredictions(taus={("x", "eff", 1, True): 10, ("x", "old", 1, True): 10, ("e", "eff", 1, True): 10})
    jobs = [job("x", "x", tmin=5, priority=1), job("y", "e", tmin=5), job("z", "e", tmin=5)]
    gpus = in_cell(node("eff", "a0", 1), "a") + in_cell(node("eff", "b0", 1) + node("old", "b1", 1), "b")
    result = get_solver("cells").solve(problem(jobs, gpus, [EFF, OLD], preds))
    assert set(result.placements) == {"x", "y", "z"}
    assert result.placements["x"].gpu_type == "old"
    assert result.reasons == {}


def test_cells_admit_nearly_what_the_global_ilp_admits_on_a_benchmark_instance():
    """192 GPUs in four cells of 48: the global ILP admits 32/39/65 jobs (priority 2/1/0);
    routing by room admitted 32/39/52. Routed by the global relaxation: every job of the
    higher levels and at most one priority-0 job fewer."""
    from catalog.gavel import read_throughputs
    from scheduler.optimizer import bench
    from scheduler.optimizer.catalog_predictions import CatalogPredictions
    from scheduler.optimizer.problem import SolverSettings

    settings = SolverSettings(adaptive_weight=False, seed=7, migration_cost_w=0.0, cell_size_gpus=48)
    p = bench.make_instance(192, CatalogPredictions.from_gavel(read_throughputs()), 7, settings)
    priority = {j.id: j.priority for j in p.jobs}

    def admitted(solver):
        counts = Counter(priority[job_id] for job_id in get_solver(solver).solve(p).placements)
        return counts[2], counts[1], counts[0]

    ilp, cells = admitted("ilp"), admitted("cells")
    assert cells[:2] == ilp[:2]
    assert ilp[2] - 1 <= cells[2] <= ilp[2]


def three_sharers(**fields):
    """Three jobs of tenant t (T_min 5) do 10/s alone on eff and keep 60% sharing one GPU."""
    preds = TablePredictions(taus={("a", "eff", 1, True): 10}, rhos={("a", "a", "eff"): 0.6})
    jobs = [job(1, "a", tmin=5), job(2, "a", tmin=5), job(3, "a", tmin=5, tenant=fields.pop("tenant3", "t"))]
    return replace(problem(jobs, node("eff", "e", 3), [EFF], preds), **fields)


def test_a_fixed_matching_decides_who_shares():
    """Matching (1, 3) fixed: 1 and 3 share a GPU, 2 runs alone (200 W for two GPUs)."""
    result = get_solver("ilp").solve(three_sharers(matching=(("1", "3"),)))
    assert result.placements["1"].partner == "3" and result.placements["2"].partner is None
    assert result.power_w == 200


def test_a_fixed_matching_never_pairs_two_tenants():
    result = get_solver("ilp").solve(three_sharers(matching=(("1", "3"),), tenant3="u"))
    assert all(placement.partner is None for placement in result.placements.values())
    assert result.power_w == 300


def test_the_matching_travels_with_a_cell():
    p = three_sharers(matching=(("1", "3"),))
    back = problem_from_dict(json.loads(json.dumps(problem_to_dict(p))))
    assert back.matching == (("1", "3"),)
    assert problem_from_dict(json.loads(json.dumps(problem_to_dict(three_sharers())))).matching is None
