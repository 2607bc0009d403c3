"""Which running jobs the second placement puts back where they run (status_quo.py): worked
by hand on two slow and two fast GPUs."""
from scheduler.optimizer.instance import compile_instance
from scheduler.optimizer.status_quo import admits_more, kept_in_place

from .factory import TablePredictions, gpu_type, job, node, problem

SLOW, FAST = gpu_type("slow", tdp=150), gpu_type("fast", tdp=300)
PREDS = TablePredictions(taus={("a", "slow", 1, True): 2.0, ("a", "fast", 1, True): 4.0})


def two_running(tmin_1: float):
    """Job 1 (T_min `tmin_1`) runs on s-0, job 2 (T_min 1) on s-1, job 3 waits; the decision
    moves 1 and 2 onto the fast GPUs and admits 3 on s-0."""
    jobs = [job(1, "a", tmin=tmin_1, current=(["s-0"], [])), job(2, "a", tmin=1, current=(["s-1"], [])),
            job(3, "a", tmin=1)]
    inst = compile_instance(problem(jobs, node("slow", "s", 2) + node("fast", "f", 2), [SLOW, FAST], PREDS))

    def option(j, gpu_type):
        return ("o", next(i for i in inst.job_options[j] if inst.all_options[i].gpu_type == gpu_type))

    return inst, [option(0, "fast"), option(1, "fast"), option(2, "slow")], option


def test_every_running_job_the_decision_moves_goes_back_on_its_current_configuration():
    inst, decision, option = two_running(tmin_1=1)
    assert kept_in_place(inst, decision) == [option(0, "slow"), option(1, "slow"), option(2, "slow")]


def test_with_only_some_jobs_given_only_those_go_back():
    inst, decision, option = two_running(tmin_1=1)
    assert kept_in_place(inst, decision, only={1}) == [option(0, "fast"), option(1, "slow"), option(2, "slow")]


def test_a_job_whose_current_configuration_is_below_its_t_min_is_not_put_back():
    """Job 1 (T_min 3) runs at 2 steps/s on slow: the decision moves it to fast on purpose."""
    inst, decision, option = two_running(tmin_1=3)
    assert kept_in_place(inst, decision) == [option(0, "fast"), option(1, "slow"), option(2, "slow")]


def test_a_job_the_decision_does_not_admit_stays_out():
    inst, decision, option = two_running(tmin_1=1)
    decision[1] = None
    assert kept_in_place(inst, decision) == [option(0, "slow"), None, option(2, "slow")]


def test_placements_compare_by_priority_level_first():
    inst, decision, _ = two_running(tmin_1=1)
    assert admits_more(inst, decision, [decision[0], decision[1], None])
    assert not admits_more(inst, decision, decision)
