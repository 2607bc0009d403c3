"""Small instances whose optimum is worked out by hand (in each test's docstring)."""
from dataclasses import replace

import pytest

from scheduler.optimizer import get_solver
from scheduler.optimizer.feasibility import BELOW_TMIN
from scheduler.optimizer.instance import compile_instance
from scheduler.optimizer.reasons import NO_PREDICTION

from .factory import TablePredictions, gpu_type, job, node, problem

SLOW, FAST = gpu_type("slow", tdp=100), gpu_type("fast", tdp=300)


def two_jobs_three_gpus(**settings):
    """A (T_min 5): slow 6/s, fast 20/s. B (T_min 10, D_j 2): slow 6/s, 2 x slow 11/s, fast 20/s.
    Cluster: one node of 2 slow GPUs, one node of 1 fast GPU.
    A slow + B 2 x slow needs 3 slow GPUs: impossible. A slow + B fast = 100 + 300 = 400 W;
    A fast + B 2 x slow = 300 + 200 = 500 W. Optimum: 400 W, A on slow, B on fast."""
    preds = TablePredictions(taus={
        ("a", "slow", 1, True): 6, ("a", "fast", 1, True): 20,
        ("b", "slow", 1, True): 6, ("b", "slow", 2, True): 11, ("b", "fast", 1, True): 20,
    })
    jobs = [job(1, "a", tmin=5), job(2, "b", tmin=10, dj=2)]
    gpus = node("slow", "s", 2) + node("fast", "f", 1)
    return problem(jobs, gpus, [SLOW, FAST], preds, **settings)


@pytest.mark.parametrize("backend", ["highs", "cbc"])
def test_ilp_finds_the_hand_checked_optimum(backend):
    result = get_solver("ilp").solve(two_jobs_three_gpus(backend=backend))
    assert result.status == "optimal"
    assert result.power_w == pytest.approx(400)
    assert result.placements["1"].gpu_type == "slow" and result.placements["1"].num_gpus == 1
    assert result.placements["2"].gpu_type == "fast"
    assert result.reasons == {}
    assert result.variables > 0 and result.constraints > 0


def shared_pair(tenant_b="t"):
    """Two jobs (T_min 5) alone on fast do 10/s; sharing one fast GPU each keeps 60% = 6/s.
    Slow does 4/s: too slow. Same tenant: one shared GPU, 300 W. Different tenants: 600 W."""
    preds = TablePredictions(
        taus={("a", "fast", 1, True): 10, ("a", "slow", 1, True): 4},
        rhos={("a", "a", "fast"): 0.6},
    )
    jobs = [job(1, "a", tenant="t", tmin=5), job(2, "a", tenant=tenant_b, tmin=5)]
    return problem(jobs, node("fast", "f", 2) + node("slow", "s", 2), [SLOW, FAST], preds)


def test_jobs_of_one_tenant_share_a_gpu_when_both_keep_t_min():
    result = get_solver("ilp").solve(shared_pair())
    assert result.power_w == pytest.approx(300)
    one, two = result.placements["1"], result.placements["2"]
    assert one.gpu_ids == two.gpu_ids and one.partners == ("2",) and two.partners == ("1",)
    assert one.predicted_throughput == pytest.approx(6)


def test_jobs_of_different_tenants_never_share():
    result = get_solver("ilp").solve(shared_pair(tenant_b="other"))
    assert result.power_w == pytest.approx(600)
    assert result.placements["1"].gpu_ids != result.placements["2"].gpu_ids
    assert result.placements["1"].partners == ()


def test_with_sharing_disabled_each_job_gets_its_own_gpu():
    p = shared_pair()

    result = get_solver("ilp").solve(replace(p, settings=replace(p.settings, theta=1)))
    assert result.power_w == pytest.approx(600)


@pytest.mark.parametrize("solver", ["ilp", "genetic", "cells", "greedy", "greedy_efficient"])
def test_priority_wins_the_last_gpu_and_the_other_job_is_told_why(solver):
    preds = TablePredictions(taus={("a", "fast", 1, True): 10})
    jobs = [job(1, "a", tmin=5, priority=0), job(2, "a", tmin=5, priority=5)]
    result = get_solver(solver).solve(problem(jobs, node("fast", "f", 1), [FAST], preds))
    assert set(result.placements) == {"2"}
    assert "higher or equal priority" in result.reasons["1"]


def test_admission_comes_before_power():
    """One slow and one fast GPU, two jobs that fit either: both run (400 W), although
    leaving one pending would draw less."""
    preds = TablePredictions(taus={(w, t, 1, True): 10 for w in "ab" for t in ("slow", "fast")})
    jobs = [job(1, "a", tmin=5), job(2, "b", tmin=5)]
    for solver in ("ilp", "genetic", "greedy"):
        result = get_solver(solver).solve(
            problem(jobs, node("slow", "s", 1) + node("fast", "f", 1), [SLOW, FAST], preds)
        )
        assert len(result.placements) == 2, solver
        assert result.power_w == pytest.approx(400)


def test_every_pending_job_has_its_reason():
    preds = TablePredictions(
        taus={("a", "fast", 1, True): 10, ("a", "fast", 2, True): 18, ("slow-one", "fast", 1, True): 1}
    )
    jobs = [
        job(1, "a", tmin=5), job(2, "a", tmin=5), job(3, "a", tmin=5),  # 2 GPUs for 3 jobs
        job(4, "slow-one", tmin=5, dj=4),  # nothing reaches its T_min
        job(5, "unknown", tmin=1),  # no prediction at all
    ]
    result = get_solver("ilp").solve(problem(jobs, node("fast", "f", 2), [FAST], preds, theta=1))
    assert len(result.placements) == 2
    assert set(result.reasons) == {"3", "4", "5"} - set(result.placements) | ({"1", "2", "3"} - set(result.placements))
    assert result.reasons["4"] == BELOW_TMIN.format(tmin=5, dj=4, best=1, k=1, gpu_type="fast")
    assert result.reasons["5"] == NO_PREDICTION.format(workload="unknown", types="fast")
    pending_a = ({"1", "2", "3"} - set(result.placements)).pop()
    assert "Not admitted" in result.reasons[pending_a]


def test_no_gpus_at_all_leaves_every_job_pending_with_a_reason():
    result = get_solver("ilp").solve(problem([job(1, "a")], [], [FAST], TablePredictions()))
    assert result.placements == {} and "no healthy GPU" in result.reasons["1"]


def test_consolidated_multi_gpu_job_lands_on_one_node():
    preds = TablePredictions(taus={("a", "fast", 4, True): 40, ("a", "fast", 4, False): 20, ("a", "fast", 1, True): 10})
    gpus = node("fast", "x", 2) + node("fast", "y", 4) + node("fast", "z", 2)
    result = get_solver("ilp").solve(problem([job(1, "a", tmin=30, dj=4)], gpus, [FAST], preds))
    assert {g.split("-")[0] for g in result.placements["1"].gpu_ids} == {"y"}
    assert result.placements["1"].consolidated


@pytest.mark.parametrize("solver", ["ilp", "genetic", "cells"])
def test_a_type_on_one_node_offers_no_spread_configuration(solver):
    """Measured spread over servers, the job would make 6 steps/s, more than the 5.5 of one
    server; with every GPU of the type on one node it can only run there, so the decision
    says consolidated at 5.5 (it used to take the spread option, recorded "spread" at 6.0 on
    GPUs of one node). With a second node the spread configuration is offered again."""
    preds = TablePredictions(
        taus={("a", "fast", 1, True): 3.0, ("a", "fast", 2, True): 5.5, ("a", "fast", 2, False): 6.0}
    )
    one_node = problem([job(1, "a", tmin=5, dj=2)], node("fast", "x", 4), [FAST], preds, throughput_value_w=100)
    placement = get_solver(solver).solve(one_node).placements["1"]
    assert placement.consolidated and placement.predicted_throughput == 5.5
    assert not any(not o.consolidated for o in compile_instance(one_node).all_options)
    two_nodes = problem([job(1, "a", tmin=5, dj=2)], node("fast", "x", 2) + node("fast", "y", 2), [FAST], preds,
                        throughput_value_w=100)
    assert any(not o.consolidated and o.tau == 6.0 for o in compile_instance(two_nodes).all_options)


def test_running_job_stays_unless_moving_pays_for_the_migration():
    """Running on fast (300 W); slow (100 W) would do. Moving saves 200 W: with a migration
    cost of 500 it stays, with 50 it moves."""
    preds = TablePredictions(taus={("a", "fast", 1, True): 10, ("a", "slow", 1, True): 10})
    jobs = [job(1, "a", tmin=5, current=(["f-0"], ()))]
    gpus = node("fast", "f", 1) + node("slow", "s", 1)
    stays = get_solver("ilp").solve(problem(jobs, gpus, [SLOW, FAST], preds, migration_cost_w=500))
    moves = get_solver("ilp").solve(problem(jobs, gpus, [SLOW, FAST], preds, migration_cost_w=50))
    assert stays.placements["1"].gpu_ids == ("f-0",)
    assert moves.placements["1"].gpu_ids == ("s-0",)


def test_time_out_falls_back_to_greedy_and_says_so():
    result = get_solver("ilp").solve(two_jobs_three_gpus(time_limit_s=0.0))
    assert result.status == "fallback"
    assert "fell back to the greedy decision" in result.fallback_reason
    assert len(result.placements) == 2  # the cluster still gets a decision


def test_unknown_backend_falls_back_too():
    result = get_solver("ilp").solve(two_jobs_three_gpus(backend="nope"))
    assert result.status == "fallback" and "nope" in result.fallback_reason


def test_unknown_solver_name_is_refused():
    with pytest.raises(ValueError, match="Unknown solver"):
        get_solver("simplex-magic")


def test_idle_gpus_count_when_not_powered_down():
    result = get_solver("ilp").solve(two_jobs_three_gpus(idle_gpus_powered_down=False))
    assert result.power_w == pytest.approx(400 + 10)  # the third GPU idles at 10 W


def test_topology_isolation_keeps_tenants_off_a_shared_switch():
    preds = TablePredictions(taus={("a", "fast", 1, True): 10})
    jobs = [job(1, "a", tenant="t", tmin=5), job(2, "a", tenant="u", tmin=5)]
    gpus = node("fast", "f", 4, switch_every=2)  # two switches of two GPUs
    result = get_solver("greedy").solve(problem(jobs, gpus, [FAST], preds, topology_isolation=True))
    switches = {p.job_id: set(p.gpu_ids) for p in result.placements.values()}
    assert len(result.placements) == 2
    assert {int(g.split("-")[1]) // 2 for g in switches["1"]} != {int(g.split("-")[1]) // 2 for g in switches["2"]}


@pytest.mark.parametrize("solver", ["ilp", "greedy", "genetic"])
def test_fairness_gives_the_smaller_tenant_its_share(solver):
    """Two GPUs, tenant t asks for two jobs, tenant u for one, same priority: with fairness on
    u's job is always admitted (its tie-break bonus is twice each of t's)."""
    preds = TablePredictions(taus={("a", "fast", 1, True): 10})
    jobs = [job(1, "a", tenant="t", tmin=5), job(2, "a", tenant="t", tmin=5), job(3, "a", tenant="u", tmin=5)]
    result = get_solver(solver).solve(problem(jobs, node("fast", "f", 2), [FAST], preds, fairness_weight=1.0, theta=1))
    assert "3" in result.placements and len(result.placements) == 2


def test_adaptive_weight_scales_the_objective_not_the_decision():
    p = two_jobs_three_gpus(adaptive_weight=True, load_window=5, base_energy_weight=1.0)

    busy = get_solver("ilp").solve(replace(p, load_history=(0.1, 0.3)))  # load now (2 GPUs / 3) is far above
    assert busy.energy_weight == pytest.approx(4.0)  # clipped at 4 x base
    assert busy.objective == pytest.approx(4.0 * 400)
    assert busy.power_w == pytest.approx(400)


def test_the_genetic_repair_admits_what_the_greedy_leaves_out():
    """Two GPUs: X (100 W) and Y (300 W). A (id 1) runs on either, B (id 2) only on X. The
    greedy gives A its cheapest GPU, X, and B waits; moving A to Y admits both (400 W), which
    the genetic algorithm's repair finds without any generation."""
    cheap, dear = gpu_type("x", tdp=100), gpu_type("y", tdp=300)
    preds = TablePredictions(taus={("a", "x", 1, True): 10, ("a", "y", 1, True): 10, ("b", "x", 1, True): 10})
    p = problem([job(1, "a", tmin=5), job(2, "b", tmin=5)], node("x", "nx", 1) + node("y", "ny", 1), [cheap, dear],
                preds, theta=1, genetic_generations=0)
    assert len(get_solver("greedy").solve(p).placements) == 1
    result = get_solver("genetic").solve(p)
    assert set(result.placements) == {"1", "2"}
    assert result.placements["1"].gpu_type == "y" and result.placements["2"].gpu_type == "x"
    assert result.power_w == pytest.approx(400)


def test_the_genetic_stop_is_a_generation_budget_not_the_clock():
    """Same seed, very different time limits: the same allocation (the budget binds)."""
    p = two_jobs_three_gpus(genetic_generations=7, seed=3)

    short = get_solver("genetic").solve(p)
    long = get_solver("genetic").solve(replace(p, settings=replace(p.settings, time_limit_s=60.0)))
    assert short.placements == long.placements
    assert "7 generations of 7" in short.notes[0]


def sharers(n: int, rho: float, theta: int):
    """n jobs (T_min 5) that do 10/s alone on a fast GPU (300 W at any load here), and n fast
    GPUs; rho: each job's fraction next to one partner."""
    preds = TablePredictions(taus={("a", "fast", 1, True): 10}, rhos={("a", "a", "fast"): rho})
    jobs = [job(i, "a", tmin=5) for i in range(1, n + 1)]
    return problem(jobs, node("fast", "f", n), [FAST], preds, theta=theta)


def jobs_per_gpu(result) -> list[int]:
    held: dict[str, int] = {}
    for placement in result.placements.values():
        for g in placement.gpu_ids:
            held[g] = held.get(g, 0) + 1
    return sorted(held.values(), reverse=True)


SOLVERS_WITH_SHARING = ["ilp", "genetic", "cells", "greedy"]


@pytest.mark.parametrize("solver", SOLVERS_WITH_SHARING)
def test_theta_three_puts_three_jobs_on_one_gpu_when_the_estimate_keeps_t_min(solver):
    """rho 0.8 next to one partner; next to two, by additive slowdown 1 / (1 + 2 x 0.25) = 2/3:
    6.67/s >= 5 for each. theta 3: one GPU, 300 W; theta 2: a pair and one alone, 600 W."""
    result = get_solver(solver).solve(sharers(3, 0.8, theta=3))
    assert jobs_per_gpu(result) == [3] and result.power_w == pytest.approx(300)
    for placement in result.placements.values():
        assert set(placement.partners) == {"1", "2", "3"} - {placement.job_id}
        assert placement.predicted_throughput == pytest.approx(20 / 3)
        assert placement.predicted_power_w == pytest.approx(100)  # a third of the GPU's
    pairs_only = get_solver(solver).solve(sharers(3, 0.8, theta=2))
    assert jobs_per_gpu(pairs_only) == [2, 1] and pairs_only.power_w == pytest.approx(600)


@pytest.mark.parametrize("solver", SOLVERS_WITH_SHARING)
def test_a_group_whose_estimate_misses_t_min_is_not_formed(solver):
    """rho 0.6 next to one partner (6/s: a pair keeps T_min 5); next to two, 1 / (1 + 2 x 2/3)
    = 0.43: 4.3/s < 5. theta 3 still gives a pair and one alone: 600 W."""
    result = get_solver(solver).solve(sharers(3, 0.6, theta=3))
    assert len(result.placements) == 3
    assert jobs_per_gpu(result) == [2, 1] and result.power_w == pytest.approx(600)


@pytest.mark.parametrize("solver", SOLVERS_WITH_SHARING)
def test_theta_above_the_maximum_acts_as_the_maximum_and_says_why(solver):
    """Five jobs, rho 0.9: a group of five would keep 1 / (1 + 4/9) = 0.69 (6.9/s >= 5), but
    theta 5 acts as MAX_THETA = 4: four on one GPU, one alone (600 W), and a note says why."""
    from scheduler.optimizer.problem import MAX_THETA, THETA_LIMIT, theta_error

    assert MAX_THETA == 4
    result = get_solver(solver).solve(sharers(5, 0.9, theta=5))
    assert jobs_per_gpu(result) == [4, 1] and result.power_w == pytest.approx(600)
    assert THETA_LIMIT.format(theta=5, max=4) in result.notes
    assert theta_error(4) is None and theta_error(1) is None and "treated as 1" in theta_error(0)


def running_group(n_running: int, n_waiting: int, theta: int, migration_cost_w: float):
    """Jobs doing 10/s alone on the one fast GPU (300 W) or 6/s on a slow one (80 W), T_min 5,
    0.8 next to one partner (a trio: 6.67/s each); the first n_running share f-0 now."""
    preds = TablePredictions(
        taus={("a", "fast", 1, True): 10, ("a", "slow", 1, True): 6}, rhos={("a", "a", "fast"): 0.8}
    )
    ids = [str(i) for i in range(1, n_running + n_waiting + 1)]
    running = ids[:n_running]
    jobs = [job(i, "a", tmin=5, current=(["f-0"], [x for x in running if x != i]) if i in running else None)
            for i in ids]
    return problem(jobs, node("fast", "f", 1) + node("slow", "s", 3), [FAST, gpu_type("slow", tdp=80)], preds,
                   theta=theta, migration_cost_w=migration_cost_w)


@pytest.mark.parametrize("solver", SOLVERS_WITH_SHARING)
def test_a_running_group_stays_together_when_moving_costs_more_than_it_saves(solver):
    """Alone on the slow GPUs the trio would draw 240 W instead of 300 W, but three moves at
    500 W each cost far more: every solver (the greedy too, the ILP's fallback) keeps it."""
    result = get_solver(solver).solve(running_group(3, 0, theta=3, migration_cost_w=500))
    assert {p.gpu_ids for p in result.placements.values()} == {("f-0",)} and len(result.placements) == 3
    assert result.power_w == pytest.approx(300)


@pytest.mark.parametrize("solver", SOLVERS_WITH_SHARING)
def test_a_waiting_job_joins_a_running_pair_when_theta_allows(solver):
    """A pair runs on f-0; a third job waits and the slow GPUs are gone (none in this cluster
    but the fast one): theta 3 lets it join the pair (6.67/s each), theta 2 cannot."""
    p = running_group(2, 1, theta=3, migration_cost_w=50)
    p = replace(p, gpus=tuple(g for g in p.gpus if g.gpu_type == "fast"))
    result = get_solver(solver).solve(p)
    assert jobs_per_gpu(result) == [3] and result.reasons == {}
    pairs_only = get_solver(solver).solve(replace(p, settings=replace(p.settings, theta=2)))
    assert jobs_per_gpu(pairs_only) == [2] and set(pairs_only.reasons) == {"3"}
