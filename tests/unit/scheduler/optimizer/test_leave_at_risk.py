"""A job running on a board at risk leaves it at its next checkpoint (keep_work.leaves_at_risk),
whatever its cool-down or move budget; one that would throw away more stays. Hand-checked cases."""
from dataclasses import replace

import pytest

from scheduler.optimizer import Placement, SolverSettings, keep_work
from scheduler.optimizer.keep_work import AT_RISK_MEAN_LIFE_S, LEAVE_AT_RISK_S, failure_loss_s, leaves_at_risk

from .factory import gpu_type, job, node, problem
from .rounds import PowerTable, solve, work_of
from .test_keep_work import work  # 2 steps/s: 100 steps since the checkpoint are 50 s of work

V100 = gpu_type("v100", tdp=300)
SETTINGS = SolverSettings(move_cooldown_s=600.0, max_moves_per_job=3)


def test_a_job_at_its_checkpoint_leaves_one_far_from_it_stays():
    assert leaves_at_risk(work(steps_since_checkpoint=100.0))  # 50 s of work
    assert leaves_at_risk(work(steps_since_checkpoint=2 * LEAVE_AT_RISK_S))  # exactly LEAVE_AT_RISK_S
    assert not leaves_at_risk(work(steps_since_checkpoint=2 * LEAVE_AT_RISK_S + 2))  # 601 s


def test_unknown_rate_counts_the_time_since_placed_and_a_job_not_started_always_leaves():
    assert leaves_at_risk(work(steps_per_s=None, placed_s_ago=300.0))
    assert not leaves_at_risk(work(steps_per_s=None, placed_s_ago=3600.0))
    assert leaves_at_risk(work(running=False, steps_since_checkpoint=1e6))


def test_a_job_that_checkpoints_waits_for_its_checkpoint_however_long_it_runs():
    """10,000 steps at 2/s since its checkpoint are 5000 s; two days left."""
    assert not leaves_at_risk(work(steps_since_checkpoint=10_000.0, remaining_steps=345_600.0))


# (its progress, all unsaved, and the time it has left, at 2 steps/s; restart 30 s; the expected
# loss staying, failure_loss_s with a mean lifetime of 12 h; whether it leaves now).
NEVER_SAVED = [
    (5000.0, 1000.0, 126.49, False),  # about to end: 126 s expected < 5030 s now
    (5000.0, 172_800.0, 44_181.69, True),  # two days left: nearly sure to fail first
    (72_000.0, 43_200.0, 56_946.86, False),  # 20 h of progress, 12 h left: 56,947 s < 72,030 s
    (7200.0, 43_200.0, 15_985.45, True),  # 2 h of progress, 12 h left: 15,985 s > 7230 s
]


@pytest.mark.parametrize(("progress_s", "left_s", "expected_loss_s", "leaves"), NEVER_SAVED)
def test_a_job_that_never_checkpointed_leaves_where_it_expects_to_lose_more_by_staying(progress_s, left_s,
                                                                                        expected_loss_s, leaves):
    assert failure_loss_s(progress_s + 30.0, left_s) == pytest.approx(expected_loss_s, abs=0.01)
    never = work(steps_since_checkpoint=2 * progress_s, remaining_steps=2 * left_s, checkpointed=False)
    assert leaves_at_risk(never) is leaves
    assert leaves_at_risk(replace(never, checkpointed=True)) is False  # would wait for its checkpoint
    assert leaves_at_risk(replace(never, remaining_steps=None)) is False  # runs on: no end to weigh


def test_the_expected_loss_of_staying_grows_with_the_time_left_towards_a_stop_and_a_lifetime():
    assert failure_loss_s(1000.0, 0.0) == 0.0  # ends now: nothing to lose
    assert failure_loss_s(1000.0, 1e9) == pytest.approx(1000.0 + AT_RISK_MEAN_LIFE_S)


def test_a_leaving_job_is_neither_held_by_its_cool_down_nor_its_move_budget():
    current = (["v-0"], [])
    pinned = work(placed_s_ago=60.0, moves=3)
    leaving, staying, elsewhere = keep_work([
        (job(1, current=current), pinned),
        (job(2, current=current), replace(pinned, steps_since_checkpoint=5000.0)),  # 2500 s of work
        (job(3, current=(["v-1"], [])), pinned),  # on a healthy board
    ], SETTINGS, frozenset({"v-0"}))
    assert (leaving.leaving, leaving.pinned, leaving.priority) == (True, False, 1)  # still protected
    assert leaving.current.gpu_ids == ("v-0",)  # its configuration stays its current one
    assert not staying.leaving and staying.pinned
    assert not elsewhere.leaving and elsewhere.pinned
    assert not keep_work([(job(1, current=current), pinned)], SETTINGS)[0].leaving  # none at risk


def on_a_board_at_risk(since_checkpoint: float, solver: str):
    """Job 1 runs alone on v-0, at risk (planned slow); v-1 of the same type is free and healthy.
    Same type, same power: no energy saving pays for a move."""
    taus = {("a", "v100", 1, True): 2.0}
    gpus = [replace(g, slow=g.id == "v-0", at_risk=g.id == "v-0") for g in node("v100", "v", 2)]
    p = problem([job(1, "a", tmin=1.0, current=(["v-0"], []))], gpus, [V100],
                PowerTable(taus, {}, powers={("a", "v100"): 250.0}), move_cooldown_s=600.0)
    placement = solve(solver, replace(p, jobs=tuple(replace(j, current=None) for j in p.jobs))).placements["1"]
    on_v0 = replace(placement, gpu_ids=("v-0",))
    works = {"1": work_of(on_v0, since_checkpoint=since_checkpoint, placed_s_ago=60.0)}
    return replace(p, jobs=keep_work([(j, works.get(j.id)) for j in p.jobs], p.settings, frozenset({"v-0"})))


@pytest.mark.parametrize("solver", ["ilp", "genetic", "greedy_efficient"])
def test_at_its_checkpoint_the_job_moves_to_a_healthy_board_within_its_cool_down(solver):
    assert solve(solver, on_a_board_at_risk(100.0, solver)).placements["1"].gpu_ids == ("v-1",)  # 50 s of work


@pytest.mark.parametrize("solver", ["ilp", "genetic", "greedy_efficient"])
def test_far_from_its_checkpoint_the_job_stays_on_the_board_at_risk(solver):
    assert solve(solver, on_a_board_at_risk(4000.0, solver)).placements["1"].gpu_ids == ("v-0",)  # 2000 s


def test_with_no_other_board_free_the_leaving_job_stays_on_the_board_at_risk():
    """Its unit finds no board not at risk and no other configuration: it stays where it is, as the
    last resort (same GPUs: it keeps running, nothing is lost)."""
    p = on_a_board_at_risk(100.0, "ilp")
    crowded = replace(p, jobs=(*p.jobs, replace(job(2, "a", tmin=1.0, current=(["v-1"], [])), priority=1,
                                                pinned=True)))
    plan = solve("ilp", crowded)
    assert plan.placements["1"].gpu_ids == ("v-0",) and plan.placements["2"].gpu_ids == ("v-1",)


def test_a_leaving_job_keeps_its_configuration_on_another_board_where_a_cheaper_one_does_not_pay():
    """Job 1 runs on v-0 (at risk) near its end: a k80 would draw 100 W less, but with 400 steps
    left the move's price (the rule of keep_work) is above that; it keeps its v100 configuration
    on v-1 rather than taking the cheaper type (its current option carries no move price)."""
    k80 = gpu_type("k80", tdp=150)
    taus = {("a", "v100", 1, True): 2.0, ("a", "k80", 1, True): 2.0}
    gpus = [replace(g, slow=g.id == "v-0", at_risk=g.id == "v-0") for g in node("v100", "v", 2)]
    p = problem([job(1, "a", tmin=1.0, current=(["v-0"], []))], gpus + node("k80", "k", 1), [V100, k80],
                PowerTable(taus, {}, powers={("a", "v100"): 300.0, ("a", "k80"): 200.0}), migration_cost_w=50.0,
                move_hysteresis=0.2)
    placement = solve("ilp", replace(p, jobs=tuple(replace(j, current=None) for j in p.jobs))).placements["1"]
    assert placement.gpu_type == "k80"  # from scratch, the k80 is the cheaper one
    on_v0 = replace(placement, gpu_type="v100", gpu_ids=("v-0",), predicted_power_w=300.0)
    works = {"1": work_of(on_v0, since_checkpoint=100.0, remaining=400.0)}
    leaving = replace(p, jobs=keep_work([(j, works.get(j.id)) for j in p.jobs], p.settings, frozenset({"v-0"})))
    assert leaving.jobs[0].leaving
    assert solve("ilp", leaving).placements["1"].gpu_ids == ("v-1",)


def test_a_leaving_job_with_no_healthy_board_of_its_type_free_takes_another_type_with_room():
    """v-1 is held by a pinned job of a higher level; job 1 keeps its v100 configuration in the
    plan, finds no v100 but its own at-risk one, and takes the free k80 (it meets T_min there)
    rather than stay on a board expected to fail."""
    k80 = gpu_type("k80", tdp=150)
    taus = {("a", "v100", 1, True): 2.0, ("a", "k80", 1, True): 1.5}
    gpus = [replace(g, slow=g.id == "v-0", at_risk=g.id == "v-0") for g in node("v100", "v", 2)]
    p = problem([job(1, "a", tmin=1.0, current=(["v-0"], []))], gpus + node("k80", "k", 1), [V100, k80],
                PowerTable(taus, {}, powers={("a", "v100"): 250.0, ("a", "k80"): 250.0}))
    works = {"1": work_of(Placement("1", "v100", ("v-0",), True, (), 2.0, 250.0), since_checkpoint=100.0)}
    leaving = replace(p, jobs=keep_work([(j, works.get(j.id)) for j in p.jobs], p.settings, frozenset({"v-0"})))
    holder = replace(job(2, "a", tmin=1.0, current=(["v-1"], [])), priority=3, pinned=True)
    plan = solve("ilp", replace(leaving, jobs=(*leaving.jobs, holder)))
    assert plan.placements["1"].gpu_ids == ("k-0",) and plan.placements["2"].gpu_ids == ("v-1",)


def two_v100s_one_at_risk_and_a_k80(jobs):
    """v-0 at risk (planned slow), v-1 healthy, k-0 healthy; 'a' runs at 2/s on either type, 250 W on a
    v100 and 100 W on the k80."""
    k80 = gpu_type("k80", tdp=150)
    taus = {("a", "v100", 1, True): 2.0, ("a", "k80", 1, True): 2.0}
    gpus = [replace(g, slow=g.id == "v-0", at_risk=g.id == "v-0") for g in node("v100", "v", 2)]
    return problem(jobs, gpus + node("k80", "k", 1), [V100, k80],
                   PowerTable(taus, {}, powers={("a", "v100"): 250.0, ("a", "k80"): 100.0}))


@pytest.mark.parametrize("solver", ["ilp", "genetic", "greedy_efficient"])
def test_a_board_at_risk_is_not_counted_nor_offered_to_new_jobs(solver):
    """Three new jobs, room for three on the three boards, one at risk: the model counts one v100
    and one k80, so two are placed (on v-1 and k-0) and the third waits rather than land on v-0."""
    from scheduler.optimizer.instance import compile_instance
    p = two_v100s_one_at_risk_and_a_k80([job(i, "a", tmin=1.0) for i in (1, 2, 3)])
    assert compile_instance(p).capacity["v100"].gpus == 1
    plan = solve(solver, p)
    assert sorted(pl.gpu_ids[0] for pl in plan.placements.values()) == ["k-0", "v-1"]
    assert len(plan.reasons) == 1 and not any("took another" in note for note in plan.notes)


def test_a_board_at_risk_counts_only_for_the_job_running_on_it():
    from scheduler.optimizer.instance import compile_instance
    p = two_v100s_one_at_risk_and_a_k80([job(1, "a", tmin=1.0, current=(["v-0"], []))])
    assert compile_instance(p).capacity["v100"].gpus == 2


def test_a_job_on_a_board_at_risk_keeps_its_place_until_its_checkpoint_though_a_move_would_pay():
    """Job 1 runs on v-0, 700 s of work past its checkpoint (above LEAVE_AT_RISK_S), long from its
    end: the k80 saves 150 W, more than the move's price ((700 + 30) s x 250 W / 3600 s x 1.2 + 50 W
    = 111 W), so on a healthy board it moves there (job 2, the same on v-1). On the board at risk it is
    held until its leave, and at its checkpoint it leaves, to the k80."""
    placed = Placement("1", "v100", ("v-0",), True, (), 2.0, 250.0)
    past = work_of(placed, since_checkpoint=1400.0, remaining=1e6)

    def round_of(job_id: str, gpu: str, since_checkpoint: float):
        p = two_v100s_one_at_risk_and_a_k80([job(job_id, "a", tmin=1.0, current=([gpu], []))])
        works = [(p.jobs[0], replace(past, steps_since_checkpoint=since_checkpoint))]
        return replace(p, jobs=keep_work(works, p.settings, frozenset({"v-0"})))

    held = round_of("1", "v-0", 1400.0)
    assert held.jobs[0].pinned and not held.jobs[0].leaving
    assert solve("ilp", held).placements["1"].gpu_ids == ("v-0",)
    assert solve("ilp", round_of("2", "v-1", 1400.0)).placements["2"].gpu_ids == ("k-0",)
    assert solve("ilp", round_of("1", "v-0", 100.0)).placements["1"].gpu_ids == ("k-0",)
