"""The pure trade-off core: Jain's index, operating points, moves and the state digest."""
import pytest

from gogh_web.dashboard import tradeoff
from scheduler.optimizer import (
    CurrentPlacement,
    GpuSpec,
    GpuTypeSpec,
    JobSpec,
    Placement,
    Plan,
    PowerCurve,
    Problem,
    SolverSettings,
    get_solver,
)
from scheduler.optimizer.serialization import PredictionSnapshot, problem_to_dict


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


# ResNet-like "w" on V100s: 4 steps/s on one GPU, 7.5 on two of one node, 200 W per GPU alone; two
# copies sharing a GPU make 0.6 x 4 = 2.4 steps/s each, the GPU at 2 x 0.6 x 80 % utilization: 290 W.
PREDICTIONS = PredictionSnapshot(
    taus=[["w", "v100", 1, True, 4.0], ["w", "v100", 2, True, 7.5], ["w", "v100", 2, False, 6.0]],
    rhos=[["w", "w", "v100", 0.6]], utilizations=[["w", "v100", 0.8]], powers=[["w", "v100", 200.0]],
)
V100 = GpuTypeSpec("v100", 32.0, 50.0, 300.0, PowerCurve(((0.0, 50.0), (1.0, 300.0))))


def cluster(jobs, gpus=("5", "6", "7", "8", "9"), **settings):
    """A problem on V100s named by `gpus` (all on node n1) with the predictions above."""
    return Problem(
        jobs=tuple(jobs), gpus=tuple(GpuSpec(g, "n1", "v100") for g in gpus), gpu_types={"v100": V100},
        predictions=PREDICTIONS, settings=SolverSettings(**settings),
    )


def shared(job_id, gpu, partners, throughput=2.4, power=145.0):
    return Placement(job_id, "v100", (gpu,), True, tuple(partners), throughput, power)


def accounted(problem_, plan, moves):
    """What the listed moves change in total, and the difference between the two points."""
    now, then = tradeoff.current_point(problem_), tradeoff.allocation_point(problem_, plan)
    listed = tuple(sum(m.to_served[i] - m.from_served[i] for m in moves) for i in (0, 1))
    return listed, (then.throughput - now.throughput, then.power_w - now.power_w)


def test_moves_name_placed_moved_and_preempted_jobs_only():
    jobs = (job("1", "a"), job("2", "a", current=CurrentPlacement(("7",))),
            job("3", "a", current=CurrentPlacement(("8",))), job("4", "a", current=CurrentPlacement(("9",))))
    moves = tradeoff.job_moves(
        cluster(jobs), allocation([placement("1", ["5"]), placement("2", ["6"]), placement("4", ["9"])])
    )
    assert [(m.job_id, m.kind, m.from_gpus, m.to_gpus) for m in moves] == [
        ("1", "place", (), ("5",)), ("2", "move", ("7",), ("6",)), ("3", "preempt", ("8",), ()),
    ]
    assert moves[1].from_type == moves[1].to_type == "v100" and moves[0].from_type == ""
    assert moves[1].from_served == (4.0, 200.0) and moves[2].to_served == (0.0, 0.0)


def test_the_current_point_is_priced_by_the_problems_predictions():
    """Not by the figures stored with the allocations (those of the round that placed the jobs):
    a job on one GPU and a job on two are what the predictions say of those configurations now."""
    jobs = (job("1", "a", current=CurrentPlacement(("5",))), job("2", "b", current=CurrentPlacement(("6", "7"))),
            job("3", "b"))
    assert tradeoff.current_served(cluster(jobs)) == {"1": (4.0, 200.0), "2": (7.5, 400.0)}
    point = tradeoff.current_point(cluster(jobs))
    assert (point.throughput, point.power_w, point.placed) == (11.5, 600.0, 2)


def test_a_solve_that_moves_nothing_lands_on_the_current_point():
    """The reported preview: "No job would move" while power went 700 -> 688 W and throughput
    91.46 -> 82.64 steps/s. With both sides priced by one problem, no move means no change."""
    jobs = (job("1", "a", t_min=3.0, current=CurrentPlacement(("5",))),
            job("2", "b", t_min=3.0, current=CurrentPlacement(("6",))))
    problem_ = cluster(jobs, base_energy_weight=4.0, adaptive_weight=False)
    plan = get_solver("ilp").solve(problem_)
    assert tradeoff.job_moves(problem_, plan) == []
    assert tradeoff.allocation_point(problem_, plan) == tradeoff.current_point(problem_)


def test_a_low_weight_buys_a_second_gpu_and_the_move_accounts_for_the_difference():
    jobs = (job("1", "a", t_min=3.0, current=CurrentPlacement(("5",))),)
    problem_ = cluster(jobs, base_energy_weight=0.05, adaptive_weight=False, throughput_value_w=100.0)
    plan = get_solver("ilp").solve(problem_)
    moves = tradeoff.job_moves(problem_, plan)
    assert [(m.kind, m.from_served, m.to_served) for m in moves] == [("move", (4.0, 200.0), (7.5, 400.0))]
    listed, difference = accounted(problem_, plan, moves)
    assert listed == pytest.approx(difference) and difference == pytest.approx((3.5, 200.0))


def test_a_job_that_keeps_its_gpu_but_gains_a_partner_is_listed_as_sharing():
    """Job 1 stays on GPU 5 while job 2 joins it: its GPUs are the same, its share and figures are not."""
    jobs = (job("1", "a", current=CurrentPlacement(("5",))), job("2", "a"))
    plan = allocation([shared("1", "5", ["2"]), shared("2", "5", ["1"])])
    moves = tradeoff.job_moves(cluster(jobs), plan)
    assert [(m.job_id, m.kind, m.from_partners, m.to_partners) for m in moves] == [
        ("1", "share", (), ("2",)), ("2", "place", (), ("1",)),
    ]
    listed, difference = accounted(cluster(jobs), plan, moves)
    assert listed == pytest.approx(difference)


def test_jobs_sharing_a_gpu_now_are_priced_by_the_groups_estimate():
    jobs = (job("1", "a", current=CurrentPlacement(("5",), ("2",))),
            job("2", "a", current=CurrentPlacement(("5",), ("1", "9"))))  # job 9 ended: it shares no more
    served = tradeoff.current_served(cluster(jobs))
    assert served["1"] == pytest.approx((2.4, 145.0)) and served["2"] == pytest.approx((2.4, 145.0))
    kept = allocation([shared("1", "5", ["2"]), shared("2", "5", ["1"])])
    assert tradeoff.job_moves(cluster(jobs), kept) == []


def test_a_job_whose_gpus_are_gone_counts_as_not_served_and_its_move_says_so():
    jobs = (job("1", "a", current=CurrentPlacement(("4",))),)  # GPU 4 went unhealthy: not in the problem
    assert tradeoff.current_served(cluster(jobs)) == {}
    moves = tradeoff.job_moves(cluster(jobs), allocation([placement("1", ["5"])]))
    assert [(m.kind, m.from_type, m.from_served) for m in moves] == [("move", "", (0.0, 0.0))]


def test_a_placement_with_other_figures_on_the_same_gpus_is_still_listed():
    """Never expected (both sides share the predictions), but the list must account for the totals."""
    jobs = (job("1", "a", current=CurrentPlacement(("5",))),)
    moves = tradeoff.job_moves(cluster(jobs), allocation([placement("1", ["5"], throughput=3.0, power=180.0)]))
    assert [(m.kind, m.from_served, m.to_served) for m in moves] == [("figures", (4.0, 200.0), (3.0, 180.0))]


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


# At 210 W (0.7 of the V100's 300 W): "w" keeps 0.9 of its speed and draws 0.75 of its power.
AT_LIMIT = PredictionSnapshot(
    taus=[["w", "v100", 1, True, 4.0], ["w", "v100", 2, True, 7.5]],
    rhos=[["w", "w", "v100", 0.6]], utilizations=[["w", "v100", 0.8]], powers=[["w", "v100", 200.0]],
    limits=[["w", "v100", 210.0, 0.9, 0.75]],
)
V100_LIMITS = GpuTypeSpec("v100", 32.0, 50.0, 300.0, PowerCurve(((0.0, 50.0), (1.0, 300.0))), power_limits_w=(210.0,))


def limited(jobs, **settings):
    return Problem(jobs=tuple(jobs), gpus=tuple(GpuSpec(g, "n1", "v100") for g in ("5", "6", "7")),
                   gpu_types={"v100": V100_LIMITS}, predictions=AT_LIMIT, settings=SolverSettings(**settings))


def test_the_current_point_is_priced_at_the_limit_the_gpus_run_at():
    jobs = (job("1", "a", current=CurrentPlacement(("5",), power_limit_w=210.0)),
            job("2", "a", current=CurrentPlacement(("6",), ("3",), power_limit_w=210.0)),
            job("3", "a", current=CurrentPlacement(("6",), ("2",), power_limit_w=210.0)),
            job("4", "a", current=CurrentPlacement(("7",), power_limit_w=150.0)))  # a limit the predictions do not know
    served = tradeoff.current_served(limited(jobs))
    assert served["1"] == pytest.approx((3.6, 150.0))
    # the pair: 2.4 steps/s each at 0.9; the GPU's 290 W at 0.75 is 217.5, capped at the 210 W limit
    assert served["2"] == pytest.approx((2.16, 105.0)) and served["3"] == served["2"]
    assert served["4"] == pytest.approx((4.0, 200.0))


def test_a_job_kept_at_its_limit_shows_no_change():
    jobs = (job("1", "a", t_min=3.0, current=CurrentPlacement(("5",), power_limit_w=210.0)),)
    problem_ = limited(jobs, base_energy_weight=4.0, adaptive_weight=False)
    plan = get_solver("ilp").solve(problem_)
    assert plan.placements["1"].power_limit_w == 210.0 and plan.placements["1"].gpu_ids == ("5",)
    assert tradeoff.job_moves(problem_, plan) == []
    assert tradeoff.allocation_point(problem_, plan) == tradeoff.current_point(problem_)
