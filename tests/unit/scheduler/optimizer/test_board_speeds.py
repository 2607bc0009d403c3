"""Each board's own speed in the plan (optimizer/board_speeds.py, docs/gpu_health.md): a type is
planned at the lowest speed of its boards not flagged slow; a flagged board is used last and
only by jobs whose T_min holds at its own speed."""
from dataclasses import replace

import pytest

from scheduler.optimizer import get_solver
from scheduler.optimizer.board_speeds import at_board_speeds, type_speeds
from scheduler.optimizer.serialization import problem_from_dict, problem_to_dict

from .factory import TablePredictions, gpu_type, job, node, problem

FAST = gpu_type("fast", tdp=300)
PREDS = TablePredictions(taus={("w", "fast", 1, True): 10.0})


def boards(*speeds_and_flags):
    return [replace(g, speed=s, slow=f) for g, (s, f) in zip(node("fast", "n", len(speeds_and_flags)),
                                                            speeds_and_flags)]


def test_a_type_is_planned_at_its_slowest_unflagged_board():
    gpus = boards((1.0, False), (0.95, False), (0.6, True))
    assert type_speeds(gpus) == {"fast": 0.95}
    scaled = at_board_speeds(problem([job(1)], gpus, [FAST], PREDS)).predictions
    assert scaled.tau("w", "fast", 1, True) == pytest.approx(9.5)
    assert scaled.memory_gb("w") is None  # what the speed does not touch passes through


def test_a_type_whose_boards_are_all_flagged_is_planned_at_their_slowest():
    assert type_speeds(boards((0.8, True), (0.7, True))) == {"fast": 0.7}


def test_new_boards_leave_the_problem_as_it_was():
    p = problem([job(1)], node("fast", "n", 2), [FAST], PREDS)
    assert at_board_speeds(p) is p


def test_a_job_whose_tmin_the_slow_board_misses_is_not_planned_on_the_type():
    """Two boards at 0.95 and 0.9 (neither flagged): the type is planned at 9/s, so a job of
    T_min 9.2 has no option there (at 10/s it would have had one) and waits."""
    gpus = boards((0.95, False), (0.9, False))
    plan = get_solver("greedy").solve(problem([job(1, tmin=9.2)], gpus, [FAST], PREDS))
    assert plan.placements == {}
    plan = get_solver("greedy").solve(problem([job(1, tmin=8.9)], gpus, [FAST], PREDS))
    assert plan.placements["1"].predicted_throughput == pytest.approx(9.0)


@pytest.mark.parametrize("solver", ["greedy", "ilp"])
def test_a_flagged_board_gets_no_tight_job(solver):
    """Boards: n-0 flagged at 0.7, n-1 healthy. A tight job (T_min 9) and a loose one (T_min 5):
    the type is planned at 1.0 (the flagged board left out), both meet T_min there, but only the
    loose one may take the flagged board (7/s >= 5, < 9)."""
    gpus = boards((0.7, True), (1.0, False))
    plan = get_solver(solver).solve(problem([job(1, tmin=9), job(2, tmin=5)], gpus, [FAST], PREDS))
    assert plan.placements["1"].gpu_ids == ("n-1",)
    assert plan.placements["2"].gpu_ids == ("n-0",)


def test_a_tight_job_does_not_take_the_only_free_board_when_it_is_flagged():
    gpus = boards((0.7, True))
    plan = get_solver("greedy").solve(problem([job(1, tmin=9)], gpus, [FAST], PREDS))
    assert "1" not in plan.placements


def test_a_flagged_board_is_used_last():
    """One loose job, a flagged board listed first: it lands on the healthy one."""
    gpus = boards((0.7, True), (1.0, False))
    plan = get_solver("greedy").solve(problem([job(1, tmin=1)], gpus, [FAST], PREDS))
    assert plan.placements["1"].gpu_ids == ("n-1",)


def test_speed_and_flag_survive_serialization():
    p = problem([job(1)], boards((0.9, True)), [FAST], PREDS)
    assert problem_from_dict(problem_to_dict(p)).gpus == p.gpus
