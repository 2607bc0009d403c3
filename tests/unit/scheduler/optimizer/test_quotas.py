"""Quotas (docs/optimization.md, "Quotas"): small instances worked out by hand (each test's
docstring), for the ILP, which formulates them, and for every other solver where it honours them."""
from dataclasses import replace

import pytest

from scheduler.optimizer import SOLVERS, get_solver, ilp
from scheduler.optimizer.ilp_model import in_quota_split, in_quota_value
from scheduler.optimizer.instance import compile_instance
from scheduler.optimizer.problem import QuotaSpec
from scheduler.optimizer.quotas import CELLS_WHOLE, LIFTED, enforce_caps

from .factory import TablePredictions, gpu_type, job, node, problem

FAST, SLOW = gpu_type("fast", tdp=300), gpu_type("slow", tdp=100)
PREDS = TablePredictions(taus={("a", "fast", 1, True): 10, ("a", "slow", 1, True): 2})
# A job of workload "a" (T_min 5) runs only on one fast GPU: slow is too slow.
EVERY_SOLVER = sorted(SOLVERS)
OPTIMISING = [name for name in EVERY_SOLVER if SOLVERS[name].optimising]


def quota_problem(jobs, fast=2, quotas=(), no_borrowing=(), **settings):
    p = problem(jobs, node("fast", "f", fast) + node("slow", "s", 1), [FAST, SLOW], PREDS, **settings)
    return replace(p, quotas=tuple(QuotaSpec(*q) for q in quotas), no_borrowing=frozenset(no_borrowing))


def running(id, gpu, tenant, priority=0, risk=0.0):
    return replace(job(id, "a", tenant=tenant, tmin=5, priority=priority, current=([gpu], [])), work_at_risk=risk)


@pytest.mark.parametrize("solver", EVERY_SOLVER)
def test_idle_quota_is_borrowed(solver):
    """Tenant own holds a quota of 2 fast GPUs and has no job; tenant b (no quota, may borrow)
    has two: both run on own's idle fast GPUs."""
    p = quota_problem([job(1, "a", tenant="b", tmin=5), job(2, "a", tenant="b", tmin=5)],
                      quotas=[("own", "fast", 2)])
    plan = get_solver(solver).solve(p)
    assert sorted(plan.placements) == ["1", "2"] and plan.reasons == {}


@pytest.mark.parametrize("solver", OPTIMISING)
def test_the_owner_reclaims_its_quota_from_the_borrower_losing_least_work(solver):
    """Both fast GPUs run borrowers of tenant b at priority 2 (job 1 would lose 500 GPU-s, job 2
    100). Tenant own (quota 1 fast) submits job 3 at priority 0. Kueue's reclaimWithinCohort:
    Any: the owner's job within its quota is admitted whatever the borrowers' priority, and the
    borrower losing the least work (job 2) is the one preempted; job 1 stays where it is."""
    p = quota_problem(
        [running(1, "f-0", "b", priority=2, risk=500.0), running(2, "f-1", "b", priority=2, risk=100.0),
         job(3, "a", tenant="own", tmin=5)],
        quotas=[("own", "fast", 1)],
    )
    plan = get_solver(solver).solve(p)
    assert sorted(plan.placements) == ["1", "3"]
    assert plan.placements["1"].gpu_ids == ("f-0",) and plan.placements["3"].gpu_ids == ("f-1",)
    assert plan.reasons["2"] == (
        "Waiting for quota: tenant b has no fast quota and there is no idle quota to borrow (owners use 1 of the 2 "
        "fast GPUs)."
    )


def test_without_the_quota_the_higher_priority_borrowers_keep_their_gpus():
    """The same cluster without quotas: priority decides, the owner's priority-0 job waits."""
    p = quota_problem([running(1, "f-0", "b", priority=2, risk=500.0), running(2, "f-1", "b", priority=2, risk=100.0),
                       job(3, "a", tenant="own", tmin=5)])
    plan = get_solver("ilp").solve(p)
    assert sorted(plan.placements) == ["1", "2"]
    assert plan.reasons["3"].startswith("Not admitted this round")


def test_an_owner_beyond_its_quota_is_a_borrower_like_any_other():
    """Tenant own (quota 1 fast) has two jobs at priority 0, tenant b one at priority 2, on 2
    fast GPUs. Own's first job is within its quota (admitted first); its second would borrow,
    and borrowed GPUs go by priority: b's job (priority 2) takes the other GPU. The one waiting
    is told so: a job of higher priority took the GPU (no owner holds it within a quota)."""
    p = quota_problem([job(1, "a", tenant="own", tmin=5), job(2, "a", tenant="own", tmin=5),
                       job(3, "a", tenant="b", tmin=5, priority=2)], quotas=[("own", "fast", 1)])
    plan = get_solver("ilp").solve(p)
    assert "3" in plan.placements and len(plan.placements) == 2
    waiting = next(iter(plan.reasons))
    assert waiting in ("1", "2")
    assert plan.reasons[waiting].startswith("Not admitted this round")


@pytest.mark.parametrize("solver", EVERY_SOLVER)
def test_a_tenant_that_may_not_borrow_stays_within_its_quota(solver):
    """Tenant c (quota 1 fast, may not borrow) has three jobs and three fast GPUs are free: one
    runs, two wait for quota, though two GPUs stay idle."""
    p = quota_problem([job(n, "a", tenant="c", tmin=5) for n in (1, 2, 3)], fast=3,
                      quotas=[("c", "fast", 1)], no_borrowing=["c"])
    plan = get_solver(solver).solve(p)
    assert len(plan.placements) == 1
    assert set(plan.reasons.values()) == {
        "Waiting for quota: tenant c uses 1 of its 1 fast quota and may not borrow."
    }


@pytest.mark.parametrize("solver", EVERY_SOLVER)
def test_a_tenant_without_quota_that_may_not_borrow_runs_nothing(solver):
    p = quota_problem([job(1, "a", tenant="c", tmin=5)], no_borrowing=["c"])
    plan = get_solver(solver).solve(p)
    assert plan.placements == {}
    assert plan.reasons == {"1": "Waiting for quota: tenant c has no quota on fast and may not borrow."}


def test_a_capped_tenant_uses_its_quota_on_the_types_it_has_one():
    """Tenant c may not borrow and holds 1 fast GPU; its two jobs run on fast (10/s) and slow
    (2/s, T_min 1), the latter only where it has quota: it has none on slow, so one waits."""
    preds = TablePredictions(taus={("a", "fast", 1, True): 10, ("a", "slow", 1, True): 2})
    p = replace(problem([job(1, "a", tenant="c"), job(2, "a", tenant="c")], node("fast", "f", 1) + node("slow", "s", 1),
                        [FAST, SLOW], preds),
                quotas=(QuotaSpec("c", "fast", 1),), no_borrowing=frozenset({"c"}))
    plan = get_solver("ilp").solve(p)
    assert [pl.gpu_type for pl in plan.placements.values()] == ["fast"]


def test_the_ilp_formulates_quotas_and_other_solvers_say_they_lift():
    p = quota_problem([job(1, "a", tenant="own", tmin=5)], quotas=[("own", "fast", 1)])
    assert not any("pre-pass" in note for note in get_solver("ilp").solve(p).notes)
    assert LIFTED.format(solver="greedy") in get_solver("greedy").solve(p).notes


def test_cells_solves_a_cluster_with_quotas_as_one_ilp():
    """Quotas are the whole cluster's: split in cells, each would see all of them."""
    p = quota_problem([job(1, "a", tenant="own", tmin=5)], fast=4, quotas=[("own", "fast", 1)], cell_size_gpus=2)
    plan = get_solver("cells").solve(p)
    assert CELLS_WHOLE in plan.notes and sorted(plan.placements) == ["1"]


def test_in_quota_copies_only_where_quotas_are():
    """No quotas: the model has no quota copies (the same size as before)."""
    jobs = [job(1, "a", tenant="own", tmin=5), job(2, "a", tenant="b", tmin=5), job(3, "a", tenant="b", tmin=5)]
    plain = get_solver("ilp").solve(quota_problem(jobs))
    with_quota = get_solver("ilp").solve(quota_problem(jobs, quotas=[("own", "fast", 1)]))
    assert with_quota.variables > plain.variables
    assert "1" in with_quota.placements


class CheapBorrower(TablePredictions):
    """Workload "b" draws 50 W on fast, "a" 300 W."""

    def power_w(self, workload, gpu_type):
        return {"a": 300.0, "b": 50.0}.get(workload) if gpu_type == "fast" else None


def test_a_cheaper_decision_keeping_the_borrower_does_not_undo_the_reclaim():
    """One fast GPU; tenant own (quota 1 fast) has job 1 (workload a, priority 0, 300 W), tenant b
    job 2 (workload b, priority 1, 50 W). The greedy decision admits job 2 (higher priority,
    cheaper); the ILP admits job 1 within its quota, and the cheaper greedy decision, admitting
    less within quotas, does not stand in for it."""
    preds = CheapBorrower(taus={("a", "fast", 1, True): 10, ("b", "fast", 1, True): 10})
    p = replace(problem([job(1, "a", tenant="own", tmin=5), job(2, "b", tenant="b", tmin=5, priority=1)],
                        node("fast", "f", 1), [FAST], preds), quotas=(QuotaSpec("own", "fast", 1),))
    plan = get_solver("ilp").solve(p)
    assert sorted(plan.placements) == ["1"]


def test_the_safety_net_drops_the_least_valuable_jobs_over_a_capped_quota():
    """A decision (as a placement retry could leave it) putting capped tenant c on 3 fast GPUs
    against a quota of 1: the two of lowest admission value (priority 0) are left out."""
    p = quota_problem([job(1, "a", tenant="c", tmin=5), job(2, "a", tenant="c", tmin=5, priority=1),
                       job(3, "a", tenant="c", tmin=5)], fast=3, quotas=[("c", "fast", 1)], no_borrowing=["c"])
    inst = compile_instance(p)
    choices = [("o", inst.job_options[j][0]) for j in range(3)]
    kept, dropped = enforce_caps(inst, choices)
    assert dropped == 2 and [inst.jobs[j].id for j, c in enumerate(kept) if c is not None] == ["2"]


def test_an_owners_probe_does_not_reclaim():
    """A probe takes only what every other job leaves, quota or not: tenant own's probe on fast
    (quota 1) waits while tenant b's job runs on the one fast GPU."""
    probe = replace(job(2, "a", tenant="own", tmin=5), probe=True, only_gpu_type="fast")
    p = quota_problem([running(1, "f-0", "b"), probe], fast=1, quotas=[("own", "fast", 1)])
    plan = get_solver("ilp").solve(p)
    assert sorted(plan.placements) == ["1"] and plan.reasons["2"].startswith("Probe on 1 x fast not started")


def test_a_power_phase_without_an_answer_falls_back_to_the_admission_phases_decision(monkeypatch):
    """With quotas, each admission stage's answer meets every floor so far: where the power
    phase finds nothing, that answer stands, not the greedy decision (here made empty, so the
    difference shows)."""
    def power_fails(model, backend_name, deadline, gap, phase, abs_gap=None, start=None):
        if phase == "power":
            raise ilp.SolveFailed("found no solution in the power phase (stopped at its time limit)")
        return real(model, backend_name, deadline, gap, phase, abs_gap, start)

    real = ilp.IlpSolver._run
    monkeypatch.setattr(ilp.IlpSolver, "_run", staticmethod(power_fails))
    monkeypatch.setattr(ilp, "greedy_choices", lambda inst, order, rank: [None] * len(inst.jobs))
    p = quota_problem([job(1, "a", tenant="own", tmin=5), job(2, "a", tenant="b", tmin=5)], quotas=[("own", "fast", 1)])
    plan = get_solver("ilp").solve(p)
    assert plan.status == "fallback" and plan.fallback_reason.endswith("fell back to the admission phase's decision.")
    assert sorted(plan.placements) == ["1", "2"]


def test_a_quota_stages_answer_that_admits_fewer_than_the_greedy_decision_does_not_stand(monkeypatch):
    """A quota stage's answer counts only what runs within quotas, so it may leave a borrower's
    running job out (as a round of the busy tenants scenario did: its next program stopped at
    the work limit without an answer, and falling back to that stage's answer preempted 19
    jobs). When the solve fails after it, the greedy decision, which keeps b's job where it runs
    and admits both jobs, stands."""
    def admission(self, inst, known, limit, notes, latest):
        latest.append([c if inst.jobs[j].tenant == "own" else None for j, c in enumerate(known)])
        raise ilp.SolveFailed("found no solution in the admission (level 0) phase (stopped at its work limit)")

    monkeypatch.setattr(ilp.IlpSolver, "_admission", admission)
    p = quota_problem([job(1, "a", tenant="own", tmin=5), running(2, "f-1", "b")], quotas=[("own", "fast", 1)])
    plan = get_solver("ilp").solve(p)
    assert plan.status == "fallback" and plan.fallback_reason.endswith("fell back to the greedy decision.")
    assert sorted(plan.placements) == ["1", "2"] and plan.placements["2"].gpu_ids == ("f-1",)


def test_an_admission_program_stopped_at_its_limit_keeps_what_else_fits_beside_its_incumbent(monkeypatch):
    """Three fast GPUs; tenant own (quota 1 fast) waits with job 1, tenant b's jobs 2 and 3 run
    on f-1 and f-2. The greedy decision is made empty, so the within-quota stage's answer (job 1)
    beats it. The next program (level 0) stops at its limit with an incumbent holding job 1 only,
    as HiGHS at its work limit can return its start (a busy-tenants round did: 16 running jobs
    preempted). Its count would be the floor, and the power phase, admitting that much at the
    least power, would preempt b's jobs. The incumbent, completed in admission order with what
    else fits, keeps them where they run, and the note gives the completed count."""
    p = quota_problem([job(1, "a", tenant="own", tmin=5), running(2, "f-1", "b"), running(3, "f-2", "b")], fast=3,
                      quotas=[("own", "fast", 1)])
    inst = compile_instance(p)

    def stops_with_job_1_only(model, backend_name, limit, gap, phase, abs_gap=None, start=None):
        answer = real_run(model, backend_name, limit, gap, phase, abs_gap, start)
        if phase != "admission (level 0)":
            return answer
        for i, var in model.x.items():
            var.varValue = var.varValue if inst.all_options[i].job == 0 else 0.0
        return "feasible", 1.0, 3.0

    def empty_unless_completing(inst, order, rank, start=None):
        return real_greedy(inst, order, rank, start=start) if start is not None else [None] * len(inst.jobs)

    real_run, real_greedy = ilp.IlpSolver._run, ilp.greedy_choices
    monkeypatch.setattr(ilp.IlpSolver, "_run", staticmethod(stops_with_job_1_only))
    monkeypatch.setattr(ilp, "greedy_choices", empty_unless_completing)
    plan = get_solver("ilp").solve(p)
    assert sorted(plan.placements) == ["1", "2", "3"]
    assert plan.placements["2"].gpu_ids == ("f-1",) and plan.placements["3"].gpu_ids == ("f-2",)
    assert any(note.startswith("Admission phase stopped") and "admitted 3," in note for note in plan.notes)


def _own_three(quotas):
    preds = TablePredictions(taus={("a", "fast", 1, True): 10, ("w", "fast", 1, True): 4, ("w", "fast", 2, True): 8})
    jobs = [replace(job(1, "w", tenant="own", tmin=6, dj=2, current=(["f-0", "f-1"], [])), work_at_risk=3600.0),
            job(2, "a", tenant="own", tmin=5), job(3, "a", tenant="own", tmin=5)]
    inst = compile_instance(replace(problem(jobs, node("fast", "f", 4), [FAST], preds), quotas=quotas))
    return inst, [("o", inst.job_options[j][0]) for j in range(3)]


def test_a_decision_counts_within_quotas_what_fits_best_not_its_most_valuable_first():
    """Tenant own (quota 2 fast; tenant other's quota claims the other 2, so there is no pool)
    runs job 1 (two fast GPUs, a GPU-hour at risk: worth 1.2 of a plain job) and jobs 2 and 3
    (one GPU each). Within the quota fit job 1 alone (1.2) or jobs 2 and 3 (2.0): the decision
    counts 2.0, as the ILP's quota copies can, where taking the most valuable first counted 1.2
    and made a decision keeping every running job look worse within quotas than one preempting
    some."""
    inst, decision = _own_three((QuotaSpec("own", "fast", 2), QuotaSpec("other", "fast", 2)))
    assert inst.values[0] > inst.values[1] == inst.values[2]
    assert in_quota_value(inst, decision)[0] == pytest.approx(2.0)
    assert in_quota_value(inst, [decision[0], None, None])[0] == pytest.approx(inst.values[0] / inst.values[1])


def test_the_gpus_no_quota_claims_are_the_cohorts_pool_and_count_within_quota():
    """The same jobs without tenant other: own's quota claims 2 of the 4 fast GPUs, the other 2
    are the cohort's pool. Jobs 2 and 3 count within own's quota (2.0) and job 1's two GPUs
    within the pool (1.2): 3.2. With a quota of 1 for other the pool is 1 GPU: job 1 within
    own's quota and job 2 in the pool count 2.2, more than jobs 2 and 3 within the quota and
    nothing in the pool (2.0, what filling the quota first and the pool after counted)."""
    inst, decision = _own_three((QuotaSpec("own", "fast", 2),))
    assert inst.quotas.pool == {"fast": 2}
    assert in_quota_value(inst, decision)[0] == pytest.approx(2.0 + inst.values[0] / inst.values[1])
    inst, decision = _own_three((QuotaSpec("own", "fast", 2), QuotaSpec("other", "fast", 1)))
    assert inst.quotas.pool == {"fast": 1}
    assert in_quota_value(inst, decision)[0] == pytest.approx(1.0 + inst.values[0] / inst.values[1])
    assert sorted(pooled for _, pooled in in_quota_split(inst, decision)) == [False, True]


PACED = TablePredictions(taus={("b", "fast", 1, True): 10, ("b", "slow", 1, True): 6})


@pytest.mark.parametrize(("fast_quota", "placed_on"), [(None, "f-0"), (("other", "fast", 1), "s-0")])
def test_a_job_behind_its_pace_leaves_its_quota_for_the_pool_not_for_an_owners_idle_quota(fast_quota, placed_on):
    """Tenant r's job (T_min 5; 6 steps/s on its quota's slow GPU, 10 on the idle fast one)
    has a pace of 9: the power phase values the fast GPU at 400 W, more than its extra power.
    Where no quota claims the fast GPU it is the cohort's pool: taking it keeps the job within
    quota, so the job moves there. Where tenant other's quota claims it (other has no job), the
    fast GPU would be borrowed: the admission's in-quota floor keeps the job on its own quota,
    which an owner never has to reclaim."""
    paced = replace(job(1, "b", tenant="r", tmin=5), pace=9.0)
    p = quota_problem([paced], fast=1, quotas=[("r", "slow", 1), *([fast_quota] if fast_quota else [])])
    p = replace(p, predictions=PACED)
    plan = get_solver("ilp").solve(p)
    assert plan.placements["1"].gpu_ids == (placed_on,)


def test_quotas_and_who_may_not_borrow_travel_with_a_serialised_problem():
    """problem_to_dict carries a problem to a Celery worker (a cell) and into the dashboard's
    trade-off sweeps: a problem that came back without its quotas would be solved as if every
    tenant borrowed freely. Tenant c owns the fast GPU and may not borrow; b's job would take it."""
    import json

    from scheduler.optimizer.serialization import problem_from_dict, problem_to_dict

    p = quota_problem([job(1, "a", tenant="c", tmin=5), job(2, "a", tenant="b", tmin=5, priority=1)], fast=1,
                      quotas=[("c", "fast", 1)], no_borrowing=["c"])
    back = problem_from_dict(json.loads(json.dumps(problem_to_dict(p))))
    assert back.quotas == (QuotaSpec("c", "fast", 1),) and back.no_borrowing == frozenset({"c"})
    assert set(get_solver("ilp").solve(back).placements) == set(get_solver("ilp").solve(p).placements) == {"1"}


@pytest.mark.parametrize(("fast_quota", "placed"), [
    (None, {"1": ("f-0",)}),  # the fast GPU is the pool: job 1 holds it within quota at its level
    (("x", "fast", 1), {"1": ("s-0",), "2": ("f-0",)}),  # x's idle quota: job 1 borrows, it may move
])
def test_a_higher_priority_job_on_the_pool_holds_it_as_quota(fast_quota, placed):
    """Job 1 of tenant b (priority 1, no quota; 10 steps/s on fast, 8 on slow, T_min 5) runs on
    the fast GPU; job 2 of tenant c (priority 0) runs only there; tenant own's quota is the
    slow GPU, idle. Where no quota claims the fast GPU it is the cohort's pool, quota for
    whoever holds it: a lower priority does not push job 1 out of it into borrowing own's slow
    GPU, as it does not push an owner out of its quota, and job 2 waits. Where tenant x's quota
    claims the fast GPU, job 1 is a borrower on either GPU: it moves to the slow one and both run."""
    preds = TablePredictions(taus={("a", "fast", 1, True): 10, ("a", "slow", 1, True): 8,
                                   ("b", "fast", 1, True): 10, ("b", "slow", 1, True): 2})
    jobs = [job(1, "a", tenant="b", tmin=5, priority=1, current=(["f-0"], [])), job(2, "b", tenant="c", tmin=5)]
    quotas = (QuotaSpec("own", "slow", 1),) + ((QuotaSpec(*fast_quota),) if fast_quota else ())
    p = replace(problem(jobs, node("fast", "f", 1) + node("slow", "s", 1), [FAST, SLOW], preds), quotas=quotas)
    plan = get_solver("ilp").solve(p)
    assert {job_id: pl.gpu_ids for job_id, pl in plan.placements.items()} == placed
