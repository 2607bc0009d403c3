"""A cell travels to a worker as JSON and its allocation comes back unchanged."""
import json
from dataclasses import replace

from scheduler.optimizer import get_solver
from scheduler.optimizer.serialization import plan_from_dict, plan_to_dict, problem_from_dict, problem_to_dict

from .factory import TablePredictions, gpu_type, job, node, problem


def sample():
    preds = TablePredictions(
        taus={
            ("a", "fast", 1, True): 10, ("a", "fast", 2, True): 18, ("a", "fast", 2, False): 15,
            ("b", "slow", 1, True): 4,
        },
        rhos={("a", "a", "fast"): 0.6},
    )
    jobs = [
        job(1, "a", tmin=5),
        job(2, "a", tmin=5, current=(["f-1"], ())),
        job(3, "a", tmin=12, dj=2),
        job(4, "b", tmin=3),
    ]
    return problem(jobs, node("fast", "f", 4) + node("slow", "s", 2), [gpu_type("fast", 300), gpu_type("slow", 100)],
                   preds, fairness_weight=1.0, seed=3)


def test_problem_round_trip_gives_the_same_decision():
    p = sample()
    q = problem_from_dict(json.loads(json.dumps(problem_to_dict(p))))
    assert q.jobs == p.jobs and q.gpus == p.gpus and q.settings == p.settings and q.gpu_types == p.gpu_types
    assert get_solver("ilp").solve(q).placements == get_solver("ilp").solve(p).placements


def test_allocation_round_trip():
    allocation = get_solver("ilp").solve(sample())
    back = plan_from_dict(json.loads(json.dumps(plan_to_dict(allocation))))
    assert back.placements == allocation.placements and back.reasons == allocation.reasons
    assert (back.status, back.power_w, back.variables) == (allocation.status, allocation.power_w, allocation.variables)


def test_payloads_written_before_groups_still_load():
    """A cell problem queued, or a trade-off sweep stored, before placements named a list of
    partners carries `partner` (an id or None): it loads as a one-partner (or empty) list."""
    allocation = get_solver("ilp").solve(sample())
    old = json.loads(json.dumps(plan_to_dict(allocation)))
    for placement in old["placements"]:
        partners = placement.pop("partners")
        placement["partner"] = partners[0] if partners else None
    assert plan_from_dict(old).placements == allocation.placements
    data = json.loads(json.dumps(problem_to_dict(sample())))
    for j in data["jobs"]:
        if j["current"]:
            j["current"] = {"gpu_ids": j["current"]["gpu_ids"], "partner": "1"}
    assert problem_from_dict(data).jobs[1].current.partners == ("1",)


def test_what_a_job_would_lose_travels_with_it_and_older_payloads_load_without_it():
    p = sample()
    kept = replace(p, jobs=(p.jobs[0], replace(p.jobs[1], move_penalty_w=321.0, pinned=True, work_at_risk=99.0),
                            *p.jobs[2:]))
    data = json.loads(json.dumps(problem_to_dict(kept)))
    assert problem_from_dict(data).jobs == kept.jobs
    for j in data["jobs"]:
        for key in ("move_penalty_w", "pinned", "work_at_risk"):
            del j[key]
    assert problem_from_dict(data).jobs == p.jobs
