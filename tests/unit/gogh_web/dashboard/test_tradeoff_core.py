"""The pure trade-off core: Jain's index, operating points, moves and the state digest."""
import pytest

from gogh_web.dashboard import tradeoff
from scheduler.optimizer import CurrentPlacement, JobSpec, Placement, Plan, Problem, SolverSettings
from scheduler.optimizer.serialization import problem_to_dict


def job(id_, tenant, t_min=2.0, current=None):
    return JobSpec(id=id_, workload="w", tenant=tenant, min_throughput=t_min, max_gpus=2, current=current)


def placement(job_id, gpus, throughput=4.0, power=200.0):
    return Placement(job_id, "v100", tuple(gpus), True, (), throughput, power)


def allocation(placements):
    return Plan("ilp", {p.job_id: p for p in placements}, {}, 0.0, 0.0, "optimal", 1.0, 0.0)


class EmptyPredictions:
    def tau(self, *a):
        return None

    rho = utilization = power_w = tau


def problem(jobs, **settings):
    return Problem(
        jobs=tuple(jobs), gpus=(), gpu_types={}, predictions=EmptyPredictions(), settings=SolverSettings(**settings)
    )


def test_jain_index_is_the_simulations_own_and_handles_zeros():
    from scheduler.simulation import metrics

    assert tradeoff.jain is metrics.jain  # one function for the dashboard and the simulation
    assert metrics.jain([1.0, 1.0, 1.0]) == 1.0
    assert metrics.jain([1.0, 0.0]) == pytest.approx(0.5)
    assert metrics.jain([]) == 1.0 and metrics.jain([0.0, 0.0]) == 1.0  # no division by zero


def test_operating_point_sums_and_scores_tenants_by_normalised_throughput():
    jobs = (job("1", "a"), job("2", "a"), job("3", "b"))
    point = tradeoff.operating_point(jobs, {"1": (4.0, 100.0), "3": (2.0, 50.0)})
    assert point.throughput == 6.0 and point.power_w == 150.0 and point.placed == 2
    # tenant a: mean(4/2, 0) = 1; tenant b: 2/2 = 1 -> equal shares
    assert point.fairness == pytest.approx(1.0)
    unfair = tradeoff.operating_point(jobs, {"1": (4.0, 100.0)})
    assert unfair.fairness == pytest.approx(0.5)


def test_a_near_zero_t_min_cannot_make_the_fairness_index_nan():
    """5e-324 steps/s (accepted before the API bounded T_min) made a share infinite, Jain's index
    NaN and every trade-off request a 500."""
    jobs = (job("1", "a", t_min=5e-324), job("2", "b"))
    point = tradeoff.operating_point(jobs, {"1": (4.0, 100.0), "2": (2.0, 50.0)})
    assert point.fairness == pytest.approx(0.5)  # tenant a's share counts as MAX_SHARE, b's as 1


def test_moves_name_placed_moved_and_preempted_jobs_only():
    jobs = (job("1", "a"), job("2", "a", current=CurrentPlacement(("7",))),
            job("3", "a", current=CurrentPlacement(("8",))), job("4", "a", current=CurrentPlacement(("9",))))
    moves = tradeoff.job_moves(
        problem(jobs), allocation([placement("1", ["5"]), placement("2", ["6"]), placement("4", ["9"])])
    )
    assert [(m.job_id, m.kind, m.from_gpus, m.to_gpus) for m in moves] == [
        ("1", "place", (), ("5",)), ("2", "move", ("7",), ("6",)), ("3", "preempt", ("8",), ()),
    ]


def test_grid_covers_every_energy_weight_at_every_fairness_weight():
    grid = tradeoff.sweep_grid()
    assert tradeoff.FAIRNESS_WEIGHTS == (0.0, 0.5, 2.0) and len(grid) == len(tradeoff.ENERGY_WEIGHTS) * 3
    assert [g.index for g in grid] == list(range(len(grid)))
    assert {(g.energy_weight, g.fairness_weight) for g in grid} == {
        (w, f) for w in tradeoff.ENERGY_WEIGHTS for f in tradeoff.FAIRNESS_WEIGHTS
    }
    assert all(g.fairness_weight == 0.0 for g in grid[:len(tradeoff.ENERGY_WEIGHTS)])  # the first row: fairness off


def test_point_problem_fixes_the_energy_and_fairness_weights():
    p = tradeoff.point_problem(
        problem([], adaptive_weight=True, base_energy_weight=1.0), tradeoff.SweepSetting(3, 0.2, 0.5)
    )
    assert (p.settings.base_energy_weight, p.settings.adaptive_weight, p.settings.fairness_weight) == (0.2, False, 0.5)


def test_digest_ignores_swept_settings_and_load_history_but_not_the_cluster():
    base = problem_to_dict(problem([job("1", "a")]))
    same = problem_to_dict(
        problem([job("1", "a")], base_energy_weight=3.0, adaptive_weight=False, load_window=5, fairness_weight=2.0)
    )
    same["load_history"] = [0.5, 0.7]
    assert tradeoff.state_digest(base) == tradeoff.state_digest(same)
    assert tradeoff.state_digest(base) != tradeoff.state_digest(
        problem_to_dict(problem([job("1", "a"), job("2", "b")]))
    )
    assert tradeoff.state_digest(base) != tradeoff.state_digest(
        problem_to_dict(problem([job("1", "a")], throughput_value_w=50.0))
    )


def test_digest_ignores_the_prediction_tables():
    base = problem_to_dict(problem([job("1", "a")]))
    measured_again = {**base, "predictions": {**base["predictions"], "tau": [["w", "v100", 1, True, 4.4]]}}
    assert tradeoff.state_digest(base) == tradeoff.state_digest(measured_again)


def test_sweep_status_ends_complete_or_failed():
    status = tradeoff.sweep_status
    assert status(expected=14, solved=14, failed=0, age_s=9999, timeout_s=200) == tradeoff.COMPLETE
    assert status(expected=14, solved=3, failed=0, age_s=10, timeout_s=200) == tradeoff.SOLVING
    assert status(expected=14, solved=3, failed=0, age_s=201, timeout_s=200) == tradeoff.FAILED  # points lost
    assert status(expected=14, solved=13, failed=1, age_s=10, timeout_s=200) == tradeoff.FAILED
    assert status(expected=14, solved=12, failed=1, age_s=10, timeout_s=200) == tradeoff.SOLVING  # one still due
    assert tradeoff.sweep_timeout_s(14, 10.0) == tradeoff.SWEEP_ALLOWANCE_S + 140.0


def test_points_at_the_same_operating_point_share_a_group_number():
    """Equal decisions sum their jobs in different orders: float noise is the same point."""
    points = [(7.5, 500.0, 1.0), (4.0, 250.0, 1.0), (7.5 + 1e-13, 500.0, 1.0), (7.5, 500.0, 0.9), (4.0, 250.0, 1.0)]
    assert tradeoff.same_point_groups(points) == [0, 1, 0, 2, 1]
    assert tradeoff.same_point_groups([(4.0, 250.0, 1.0)] * 21) == [0] * 21  # every setting, one decision
    assert tradeoff.same_point_groups([(4.0, 250.0, 1.0), (4.01, 250.0, 1.0)]) == [0, 1]
    assert tradeoff.same_point_groups([]) == []


def test_surplus_value_defaults_only_when_unset():
    assert tradeoff.surplus_value_w(0.0) == tradeoff.DEFAULT_SURPLUS_VALUE_W
    assert tradeoff.surplus_value_w(30.0) == 30.0


def test_core_imports_no_django():
    import ast
    import inspect

    tree = ast.parse(inspect.getsource(tradeoff))
    modules = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)} | {
        a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
    }
    assert not any(m and m.startswith("django") for m in modules)
