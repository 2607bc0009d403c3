"""simulate --health: boards whose remapped rows rise before they fail and one braked board
(health_signals.py), read as the agent would and planned with the control plane's rule
(telemetry.gpu_health) by the learning policies; the report's keys and the ablation."""
import pytest

from scheduler.simulation.board_watch import BoardWatch
from scheduler.simulation.boards import Boards
from scheduler.simulation.cluster import build_gpus, gpu_types
from scheduler.simulation.engine import Simulation
from scheduler.simulation.health_signals import (
    HOUR_S,
    LEAD_H,
    THROTTLE_CLOCK,
    THROTTLE_H,
    WARNED,
    HealthSignals,
    Warned,
)
from scheduler.simulation.jobs import SimJob
from scheduler.simulation.measurements import without_memory
from scheduler.simulation.metrics import policy_metrics
from scheduler.simulation.policies import NO_HEALTH, POLICIES, Policy
from scheduler.simulation.run import build_scenario
from scheduler.simulation.scenario import Failure, Scenario
from scheduler.simulation.truth import Truth
from telemetry.gpu_health import SUSTAINED_S

from .test_power_limits_boards import ObservedCatalog, _rows

POOL = [f"v100-s{s}-g{i}" for s in range(2) for i in range(4)]
SPAN_S = 10 * 24 * HOUR_S


def test_warned_boards_fail_after_their_rows_rise_and_one_other_board_is_braked():
    signals = HealthSignals(POOL, seed=3, span_s=SPAN_S)
    assert len(signals.warned) == WARNED and set(signals.warned) <= set(POOL)
    assert signals.throttled in POOL and signals.throttled not in signals.warned
    for gpu, warned in signals.warned.items():
        assert 0.25 * SPAN_S <= warned.fails_s <= 0.75 * SPAN_S
        assert LEAD_H[0] * HOUR_S <= warned.fails_s - warned.warns_s <= LEAD_H[1] * HOUR_S
        rows = [signals.remapped_rows(gpu, warned.warns_s + f * (warned.fails_s - warned.warns_s)) for f in
                (-0.01, 0.0, 0.55, 0.99)]
        assert rows == [0, 1, 5, 8]  # none before the lead, then one more every eighth of it
    assert signals.failures == sorted((w.fails_s, g) for g, w in signals.warned.items())
    start, end = signals.throttle_s
    assert end - start == THROTTLE_H * HOUR_S
    assert signals.clock_ratio(signals.throttled, start) == THROTTLE_CLOCK
    assert signals.clock_ratio(signals.throttled, end) == 1.0 and signals.clock_ratio(POOL[0], start) in (1.0,)
    braked = signals.sample(signals.throttled, start)
    assert (braked["throttle_reasons"], braked["sm_clock_mhz"] / braked["sm_clock_max_mhz"]) == (0x40, THROTTLE_CLOCK)
    assert signals.warned == HealthSignals(POOL, seed=3, span_s=SPAN_S).warned  # fixed by the seed
    assert signals.warned != HealthSignals(POOL, seed=4, span_s=SPAN_S).warned


def test_the_braked_board_truly_runs_at_its_clock_ratio_meanwhile():
    signals = HealthSignals(POOL, seed=0, span_s=SPAN_S)
    boards = Boards(POOL, signals=signals)
    start, _ = signals.throttle_s
    assert boards.varies
    assert boards.speed(signals.throttled, start - 1) == 1.0
    assert boards.speed(signals.throttled, start) == THROTTLE_CLOCK


def _signals(warned=(), throttled=None, throttle_s=(0.0, 0.0)):
    signals = HealthSignals([], seed=0)
    signals.warned = {w.gpu: w for w in warned}
    signals.throttled, signals.throttle_s = throttled, throttle_s
    return signals


def test_the_watch_flags_a_warned_board_at_its_first_row_and_plans_a_sustained_brake():
    signals = _signals([Warned("g0", fails_s=20 * HOUR_S, warns_s=10 * HOUR_S)], "g1", (HOUR_S, 5 * HOUR_S))
    boards = Boards(["g0", "g1", "g2"], signals=signals)
    watch = BoardWatch(boards, learns=True, truth_speeds=False, health=True)
    assert not watch.read_health(["g0", "g1", "g2"], 0.0)  # nothing warns yet: no plan changed
    assert not watch.planned_slow("g0")
    assert not watch.read_health(["g0", "g1"], HOUR_S)  # the brake begins: one sample is not enough
    assert watch.planned_speed("g1", HOUR_S) == 1.0
    assert watch.read_health(["g0", "g1"], HOUR_S + SUSTAINED_S)
    assert watch.planned_speed("g1", HOUR_S + SUSTAINED_S) == pytest.approx(THROTTLE_CLOCK)
    assert watch.planned_slow("g1") and not watch.planned_slow("g0")
    assert watch.read_health(["g0", "g1"], 10 * HOUR_S)  # the first remapped row; the brake has lifted
    assert watch.planned_slow("g0") and not watch.planned_slow("g1") and watch.planned_speed("g1", 0) == 1.0
    watch.failed("g0", 20 * HOUR_S, 3600.0)
    assert watch.metrics()["at_risk_flagged_before_failure_h"] == 10.0
    assert watch.metrics()["failed_gpu_work_lost_gpu_h"] == 1.0


def test_without_the_rule_nothing_is_read_and_the_warning_is_null():
    signals = _signals([Warned("g0", fails_s=20 * HOUR_S, warns_s=10 * HOUR_S)])
    boards = Boards(["g0", "g1"], signals=signals)
    for watch in (BoardWatch(boards, learns=True, truth_speeds=False, health=False),
                  BoardWatch(boards, learns=False, truth_speeds=True, health=True)):  # the oracle: no rule
        assert not watch.read_health(["g0", "g1"], 11 * HOUR_S)
        assert not watch.planned_slow("g0")
        watch.failed("g0", 20 * HOUR_S, 0.0)
        assert watch.metrics()["at_risk_flagged_before_failure_h"] is None


def test_a_board_that_failed_unflagged_gives_no_warning_figure():
    signals = _signals([Warned("g0", fails_s=20 * HOUR_S, warns_s=10 * HOUR_S)])
    watch = BoardWatch(Boards(["g0"], signals=signals), learns=True, truth_speeds=False, health=True)
    watch.read_health(["g0"], 5 * HOUR_S)  # read before its rows rose, never after
    watch.failed("g0", 20 * HOUR_S, 0.0)
    assert watch.metrics()["at_risk_flagged_before_failure_h"] is None


def _run(policy):
    """Two V100s; g0's rows rise from 0.2 h and it fails at 3 h (a short job from 0 keeps the rounds,
    and so the agent's readings, going until 0.3 h); a job that never checkpoints arrives at 0.5 h.
    With the rule it goes to g1 (the at-risk board is used last) and loses nothing."""
    rows = _rows("A")
    signals = _signals([Warned("v100-s0-g0", fails_s=3 * HOUR_S, warns_s=0.2 * HOUR_S)])
    boards = Boards(["v100-s0-g0", "v100-s0-g1"], signals=signals)
    jobs = (SimJob("a", "A", 0.0, 1, 0.3 * HOUR_S * 10.0, 1.0),
            SimJob("b", "A", 0.5 * HOUR_S, 1, 5 * HOUR_S * 10.0, 1.0))
    sc = Scenario(jobs=jobs, gpus=build_gpus((("v100", 2),)), gpu_types=gpu_types(["v100"]), boards=boards,
                  failures=(Failure(3 * HOUR_S, "v100-s0-g0"),))
    sim = Simulation(sc, Truth(rows, deviation=0.0, noise=0.0), policy, ObservedCatalog(rows))
    return sim.run()


def test_the_rule_keeps_a_new_job_off_an_at_risk_board_and_the_ablation_loses_its_work():
    with_rule = policy_metrics(_run(Policy("g", "ilp", "catalog")))
    without = policy_metrics(_run(Policy("g", "ilp", "catalog", health=False)))
    assert with_rule["failed_gpu_work_lost_gpu_h"] == 0.0
    assert 2.7 <= with_rule["at_risk_flagged_before_failure_h"] <= 2.8  # from the first round after 0.2 h
    assert without["failed_gpu_work_lost_gpu_h"] == pytest.approx(2.5, abs=0.11)  # 0.5 h to 3 h on g0
    assert without["at_risk_flagged_before_failure_h"] is None
    assert with_rule["completed"] == without["completed"] == 2


def test_simulate_health_adds_the_failures_and_the_ablation_policy(reference_records):
    truth = Truth(without_memory(reference_records), seed=0)
    scenario = build_scenario(truth, jobs=6, seed=0, health=True)
    signals = scenario.boards.signals
    assert {(f.time_s, f.gpu_id) for f in scenario.failures} == set(signals.failures)
    assert {g.rsplit("-", 1)[0] for g in signals.signalled()} <= {"v100-s0", "v100-s1"}  # boards that run jobs
    plain = build_scenario(truth, jobs=6, seed=0)
    assert plain.boards.signals is None and not plain.failures
    assert [j.arrival_s for j in plain.jobs] == [j.arrival_s for j in scenario.jobs]  # the same arrivals
    assert NO_HEALTH not in POLICIES and NO_HEALTH.name == "gogh_no_health" and not NO_HEALTH.health


def _leaving(policy):
    """Two V100s; job a (10 steps/s, 5 h, a checkpoint every 900 s of training) starts on g0 at 0,
    whose rows rise from 1.05 h (first read at the 3960 s round, 360 s after its checkpoint at
    3600 s) and which fails at 3.2 h (720 s after its checkpoint at 10800 s)."""
    rows = _rows("A")
    signals = _signals([Warned("v100-s0-g0", fails_s=3.2 * HOUR_S, warns_s=1.05 * HOUR_S)])
    boards = Boards(["v100-s0-g0", "v100-s0-g1"], signals=signals)
    jobs = (SimJob("a", "A", 0.0, 1, 5 * HOUR_S * 10.0, 1.0, checkpoint_interval_s=900.0),)
    sc = Scenario(jobs=jobs, gpus=build_gpus((("v100", 2),)), gpu_types=gpu_types(["v100"]), boards=boards,
                  failures=(Failure(3.2 * HOUR_S, "v100-s0-g0"),))
    return Simulation(sc, Truth(rows, deviation=0.0, noise=0.0), policy, ObservedCatalog(rows)).run()


def test_a_running_job_leaves_an_at_risk_board_at_its_next_checkpoint():
    """With the rule job a moves to g1 at the round the board turns at risk (its move throws away
    the 360 s since its checkpoint, at most LEAVE_AT_RISK_S), and the failure costs it nothing;
    without it the failure throws away the 720 s since its checkpoint."""
    with_rule, without = _leaving(Policy("g", "ilp", "catalog")), _leaving(Policy("g", "ilp", "catalog", health=False))
    assert with_rule.jobs[0].last_gpus == ("v100-s0-g1",) and without.jobs[0].last_gpus == ("v100-s0-g1",)
    assert with_rule.interruptions == {"moved": 1}
    assert with_rule.lost_gpu_s["moved"] == pytest.approx(360.0)
    assert with_rule.boards.metrics()["failed_gpu_work_lost_gpu_h"] == 0.0
    assert without.interruptions == {"failed": 1}
    assert without.boards.metrics()["failed_gpu_work_lost_gpu_h"] == pytest.approx(0.2)
    assert with_rule.jobs[0].done_at is not None and without.jobs[0].done_at is not None


def _below_tmin_run(checkpoint_interval_s, t_min=9.5):
    """Job a (T_min 9.5 unless said, up to two GPUs) is predicted at 10 on one V100 and truly runs at 9, for 5 h:
    its prediction, which this policy never corrects, says it meets T_min; two V100s are predicted
    at 19. Noise 0: its fifth measurement (t = 1800 s, rounds of 360 s) puts it surely below."""
    from catalog.measurement_record import MeasurementRecord

    def rows(one, two):
        return [MeasurementRecord("A", "v100", one), MeasurementRecord("A", "v100", two, num_gpus=2)]

    jobs = (SimJob("a", "A", 0.0, 2, 5 * HOUR_S * 9.0, t_min, checkpoint_interval_s),)
    sc = Scenario(jobs=jobs, gpus=build_gpus((("v100", 2),)), gpu_types=gpu_types(["v100"]), boards=Boards(()))
    return sc, Simulation(sc, Truth(rows(9.0, 17.0), deviation=0.0, noise=0.0), Policy("g", "ilp", "catalog"),
                          ObservedCatalog(rows(10.0, 19.0))).run()


def test_a_job_measured_below_its_tmin_moves_where_its_prediction_meets_it():
    """Its measurements say it is below T_min after five rounds (30 min): it moves to two V100s, at a
    checkpoint (every 300 s of training: a move throws away at most that). Never checkpointing,
    it would throw away all its work: it stays."""
    from scheduler.optimizer.keep_work import MIN_MEASUREMENTS

    run = _below_tmin_run
    sc, checkpointing = run(300.0)
    (state,) = checkpointing.jobs
    assert checkpointing.interruptions == {"moved": 1} and len(state.last_gpus) == 2
    assert state.below_s <= (MIN_MEASUREMENTS + 1) * sc.round_s + 300  # its first rounds, then the restart
    assert state.done_at < 5 * HOUR_S
    _, never = run(None)
    (state,) = never.jobs
    assert never.interruptions == {} and len(state.last_gpus) == 1


def test_a_job_measured_below_its_tmin_moves_at_the_round_after_its_checkpoint():
    """With T_min 9.2 and a checkpoint every 1000 s, job a is measured below at t = 1800 s, 800 s
    after its checkpoint: more than LEAVE_AT_RISK_S, and more than it lacks by staying (its 145,800
    steps left take 16,200 s at 9/s, 15,848 s at 9.2/s: 352 s behind), so it may not move yet. The
    round at 2160 s, 160 s after the checkpoint at 2000 s, solves because it now may, and moves it:
    160 GPU-s thrown away, below T_min for 2160 s and the restart overhead (30 s). The round used to
    solve at 1800 s only, and the job ran below T_min for its whole 5 h."""
    sc, run = _below_tmin_run(1000.0, t_min=9.2)
    (state,) = run.jobs
    assert run.interruptions == {"moved": 1} and len(state.last_gpus) == 2
    assert run.lost_gpu_s["moved"] == pytest.approx(160.0)
    assert state.below_s == pytest.approx(2160.0 + sc.restart_overhead("A"))


def test_a_job_far_enough_below_its_tmin_moves_before_its_checkpoint():
    """At T_min 9.5 the same job lacks 16,200 - 15,347 = 853 s by staying, more than the 800 s since
    its checkpoint and the 30 s restart a move costs: it moves at t = 1800 s, throwing away 800 GPU-s."""
    sc, run = _below_tmin_run(1000.0)
    (state,) = run.jobs
    assert run.interruptions == {"moved": 1} and len(state.last_gpus) == 2
    assert run.lost_gpu_s["moved"] == pytest.approx(800.0)
    assert state.below_s == pytest.approx(1800.0 + sc.restart_overhead("A"))


def test_a_job_measured_below_its_tmin_beside_its_partner_leaves_the_shared_gpu():
    """Jobs a (A, T_min 8.5) and b (B, T_min 5) are predicted at 9 each sharing a V100 (10 alone),
    so the plan shares one and leaves the other idle. Truly, a runs at 8 beside b. Noise 0: after
    five rounds its measurements there put it surely below, and at its checkpoint (every 300 s)
    the pair parts: one of them takes the idle V100, and a runs alone at 10. The rule used to
    measure only jobs running alone, and a ran below its T_min beside b to its end."""
    from catalog.measurement_record import MeasurementRecord
    from scheduler.optimizer.keep_work import MIN_MEASUREMENTS

    def rows(a_shared):
        alone = [MeasurementRecord(w, "v100", 10.0) for w in ("A", "B")]
        return alone + [MeasurementRecord("A", "v100", a_shared, partner="B", partner_throughput=9.0),
                        MeasurementRecord("B", "v100", 9.0, partner="A", partner_throughput=a_shared)]

    jobs = (SimJob("a", "A", 0.0, 1, 5 * HOUR_S * 8.0, 8.5, 300.0), SimJob("b", "B", 0.0, 1, 6 * HOUR_S * 9.0, 5.0))
    sc = Scenario(jobs=jobs, gpus=build_gpus((("v100", 2),)), gpu_types=gpu_types(["v100"]), boards=Boards(()))
    run = Simulation(sc, Truth(rows(8.0), deviation=0.0, noise=0.0), Policy("g", "ilp", "catalog"),
                     ObservedCatalog(rows(9.0))).run()
    a, b = run.jobs
    assert a.below_s <= (MIN_MEASUREMENTS + 2) * sc.round_s + sc.restart_overhead("A")
    assert a.done_at < 5 * HOUR_S and a.placement is None
    assert run.interruptions == {"moved": 1}
