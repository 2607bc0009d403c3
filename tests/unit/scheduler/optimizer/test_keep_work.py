"""keep_work: what a placed or running job throws away if moved or stopped, written into its
JobSpec (levels, move penalty, cool-down, work at risk); hand-checked numbers."""
from dataclasses import replace

import pytest

from scheduler.optimizer import RunningWork, SolverSettings, keep_work
from scheduler.optimizer.admission import RISK_SHARE, admission_values
from scheduler.optimizer.feasibility import move_cost
from scheduler.optimizer.instance import compile_instance
from scheduler.optimizer.keep_work import MOVE_HORIZON_S

from .factory import TablePredictions, gpu_type, job, node, problem

SETTINGS = SolverSettings(migration_cost_w=50.0, move_cooldown_s=600.0, move_hysteresis=0.2, max_preemptions_per_hour=2)


def work(**over) -> RunningWork:
    base = {
        "steps_since_checkpoint": 100.0, "remaining_steps": 2000.0, "steps_per_s": 2.0, "power_w": 300.0,
        "num_gpus": 2, "restart_overhead_s": 30.0, "placed_s_ago": 3600.0, "preemptions_last_hour": 0,
        "running": True,
    }
    return RunningWork(**{**base, **over})


def test_a_waiting_job_only_moves_to_its_even_level_and_keeps_the_flat_migration_cost():
    (spec,) = keep_work([(job(1, priority=3), None)], SETTINGS)
    assert (spec.priority, spec.move_penalty_w, spec.pinned, spec.work_at_risk) == (6, None, False, 0.0)


def test_a_running_job_is_protected_one_level_above_waiting_jobs_of_its_priority_below_higher_ones():
    running, same, higher = keep_work(
        [(job(1, priority=1, current=(["g0"], [])), work()), (job(2, priority=1), None), (job(3, priority=2), None)],
        SETTINGS,
    )
    assert same.priority < running.priority < higher.priority
    assert running.priority == 3


def test_the_move_penalty_is_the_lost_energy_over_the_remaining_time_with_the_margin():
    (spec,) = keep_work([(job(1, current=(["g0"], [])), work())], SETTINGS)
    # redo 100 steps / 2 = 50 s, + 30 s overhead = 80 s at 300 W = 24000 J; remaining 2000 / 2 = 1000 s
    assert spec.move_penalty_w == pytest.approx(24000 / 1000 * 1.2 + 50.0)
    assert spec.work_at_risk == pytest.approx(80.0 * 2)


def test_a_replicas_move_costs_one_and_a_half_times_a_training_jobs_of_the_same_restart():
    """By hand: nothing to redo, 30 s of restart at 300 W over the 600 s cool-down = 15 W, x 1.2
    hysteresis + 50 W = 68 W for a training job; a replica pays 1.5 x 68 = 102 W."""
    restart_only = work(steps_since_checkpoint=0.0, remaining_steps=None)
    training, replica = keep_work(
        [(job(1, current=(["g0"], [])), restart_only), (replace(job(2, current=(["g1"], [])), service=True),
                                                         restart_only)],
        SETTINGS,
    )
    assert training.move_penalty_w == pytest.approx(68.0)
    assert replica.move_penalty_w == pytest.approx(102.0)


def test_unknown_rate_counts_all_time_since_placed_and_unknown_remaining_pays_back_within_the_cool_down():
    (spec,) = keep_work([(job(1, current=(["g0"], [])), work(steps_per_s=None, placed_s_ago=900.0))], SETTINGS)
    # redo 900 s + 30 s at 300 W over the 600 s cool-down
    assert spec.move_penalty_w == pytest.approx(930 * 300 / 600 * 1.2 + 50.0)
    (spec,) = keep_work([(job(1, current=(["g0"], [])), work(remaining_steps=None))], SETTINGS)
    assert spec.move_penalty_w == pytest.approx(80 * 300 / 600 * 1.2 + 50.0)


def test_a_job_near_its_end_is_dear_to_move():
    (near,) = keep_work([(job(1, current=(["g0"], [])), work(remaining_steps=2.0))], SETTINGS)
    (far,) = keep_work([(job(1, current=(["g0"], [])), work(remaining_steps=2000.0))], SETTINGS)
    # the same lost energy over a thousandth of the time: a thousand times the W-equivalent
    assert near.move_penalty_w - 50.0 == pytest.approx(1000 * (far.move_penalty_w - 50.0))


def test_a_saving_is_credited_over_at_most_the_move_horizon():
    """A million steps left at 2 steps/s is 500000 s, but a move must pay back within an hour."""
    (spec,) = keep_work([(job(1, current=(["g0"], [])), work(remaining_steps=1e6))], SETTINGS)
    assert MOVE_HORIZON_S == 3600.0
    assert spec.move_penalty_w == pytest.approx(24000 / 3600 * 1.2 + 50.0)


def test_a_job_placed_but_not_started_loses_nothing_but_is_still_protected_and_pinned():
    (spec,) = keep_work([(job(1, current=(["g0"], [])), work(running=False, placed_s_ago=10.0))], SETTINGS)
    assert (spec.priority, spec.move_penalty_w, spec.pinned, spec.work_at_risk) == (1, None, True, 0.0)


def test_unknown_power_falls_back_to_the_flat_migration_cost():
    (spec,) = keep_work([(job(1, current=(["g0"], [])), work(power_w=None))], SETTINGS)
    assert spec.move_penalty_w is None and spec.work_at_risk == pytest.approx(160.0)


def test_pinned_only_within_the_cool_down():
    pinned, free = keep_work(
        [
            (job(1, current=(["g0"], [])), work(placed_s_ago=599.0)),
            (job(2, current=(["g1"], [])), work(placed_s_ago=600.0)),
        ],
        SETTINGS,
    )
    assert (pinned.pinned, free.pinned) == (True, False)


def test_a_job_at_its_preemption_limit_ranks_above_every_other_level():
    at_limit, high = keep_work(
        [(job(1, priority=0, current=(["g0"], [])), work(preemptions_last_hour=2)), (job(2, priority=5), None)],
        SETTINGS,
    )
    assert at_limit.priority > high.priority
    (below,) = keep_work([(job(1, current=(["g0"], [])), work(preemptions_last_hour=1))], SETTINGS)
    assert below.priority == 1


def test_work_at_risk_only_breaks_ties_within_a_level():
    jobs = tuple(
        replace(job(n, priority=p), work_at_risk=risk)
        for n, (p, risk) in enumerate([(0, 300.0), (0, 100.0), (0, 0.0), (1, 0.0)])
    )
    values = admission_values(jobs, False, [True] * 4)
    assert values[0] > values[1] > values[2] == 1.0
    assert sum(values[:3]) - 3.0 == pytest.approx(RISK_SHARE) and RISK_SHARE < 0.25
    assert values[3] > sum(values[:3])  # one job of a higher level outweighs the whole level below
    with_fairness = admission_values(jobs, True, [True] * 4)
    assert values[3] > 0 and with_fairness[3] > sum(with_fairness[:3])


def pinned_instance(pinned: bool):
    """Job 1 runs alone on slow; fast (cheaper per step) is free, and job 2 waits and could share
    with it on slow: pinned, job 1 is offered only where it is, and no new group."""
    taus = {("a", "slow", 1, True): 2.0, ("a", "fast", 1, True): 2.0, ("a", "slow", 2, True): 3.5}
    preds = TablePredictions(taus, {("a", "a", "slow"): 0.9})
    spec = replace(job(1, "a", dj=2, current=(["s-0"], [])), pinned=pinned)
    return compile_instance(problem([spec, job(2, "a")], node("slow", "s", 2) + node("fast", "f", 1),
                                    [gpu_type("slow", 150), gpu_type("fast", 300)], preds, theta=2))


def test_a_pinned_job_is_offered_only_its_current_configuration():
    free, pinned = pinned_instance(False), pinned_instance(True)
    assert len(free.job_options[0]) == 3 and free.job_groups[0]
    assert [free.all_options[i].current for i in pinned.job_options[0]] == [True]
    assert pinned.job_all_options[0] == pinned.job_options[0]
    assert pinned.job_groups[0] == [] and pinned.job_options[1] == free.job_options[1]


def test_a_job_moved_max_moves_per_job_times_is_pinned_for_good():
    settings = replace(SETTINGS, max_moves_per_job=3)
    below, at = keep_work(
        [(job(1, current=(["g0"], [])), work(moves=2)), (job(2, current=(["g1"], [])), work(moves=3))], settings
    )
    assert (below.pinned, at.pinned) == (False, True)
    (never,) = keep_work([(job(1, current=(["g0"], [])), work(moves=0))], replace(SETTINGS, max_moves_per_job=0))
    assert never.pinned  # 0: never moved to save energy
    assert at.priority == below.priority == 1  # still preemptible by a higher priority


def test_a_move_is_priced_at_the_energy_weight_but_never_below_one():
    """At low load (weight < 1) energy is cheap against throughput, but a restart throws away the
    job's time too: the move keeps its full penalty. At high load it is weighted like the power."""
    spec = replace(job(1), move_penalty_w=80.0)
    assert move_cost(spec, SETTINGS, 0.25) == pytest.approx(80.0)
    assert move_cost(spec, SETTINGS, 2.0) == pytest.approx(160.0)
    assert move_cost(job(1), SETTINGS, 0.25) == pytest.approx(SETTINGS.migration_cost_w)
