"""Topology-aware isolation: a PCIe switch serves one tenant, also across cells and the
cells' second chance, and tenants fill their own switches before they open another."""
import pytest

from scheduler.optimizer import get_solver

from .factory import TablePredictions, gpu_type, job, node, problem

FAST = gpu_type("fast", tdp=300)
PREDS = TablePredictions(taus={("a", "fast", 1, True): 10})


def switch_tenants(p, result):
    gpus = {g.id: g for g in p.gpus}
    tenant = {j.id: j.tenant for j in p.jobs}
    owners = {}
    for placement in result.placements.values():
        for g in placement.gpu_ids:
            owners.setdefault((gpus[g].node, gpus[g].pcie_switch), set()).add(tenant[placement.job_id])
    return owners


def test_cells_second_chance_does_not_put_another_tenant_on_a_switch_a_cell_gave_away():
    """Cell a: one node, two GPUs on one switch; cell b: one GPU. Both jobs are routed to a
    (most room); a's placement gives its switch to t, so u's job waits and gets its second
    chance, which must use b's GPU, not the free GPU on t's switch."""
    gpus = [g.__class__(g.id, g.node, g.gpu_type, g.pcie_switch, "a") for g in node("fast", "x", 2, switch_every=2)]
    gpus += [g.__class__(g.id, g.node, g.gpu_type, g.pcie_switch, "b") for g in node("fast", "y", 1, switch_every=2)]
    jobs = [job(1, "a", tenant="t", tmin=5, priority=2), job(2, "a", tenant="u", tmin=5, priority=1)]
    p = problem(jobs, gpus, [FAST], PREDS, topology_isolation=True, theta=1)
    result = get_solver("cells").solve(p)
    assert set(result.placements) == {"1", "2"}
    assert result.placements["2"].gpu_ids == ("y-0",)
    assert all(len(tenants) == 1 for tenants in switch_tenants(p, result).values())


@pytest.mark.parametrize("solver", ["ilp", "genetic", "greedy"])
def test_a_tenant_fills_its_own_switch_before_opening_another(solver):
    """Four GPUs, two switches. Job 1 (t) runs on f-2 (switch 1). Job 2 (t) should take f-3,
    next to it, leaving switch 0 whole for tenant u's two jobs; taking f-0 would leave u one
    job short."""
    jobs = [job(1, "a", tenant="t", tmin=5, current=(["f-2"], ())), job(2, "a", tenant="t", tmin=5),
            job(3, "a", tenant="u", tmin=5), job(4, "a", tenant="u", tmin=5)]
    p = problem(jobs, node("fast", "f", 4, switch_every=2), [FAST], PREDS, topology_isolation=True, theta=1)
    result = get_solver(solver).solve(p)
    assert set(result.placements) == {"1", "2", "3", "4"}
    assert result.placements["2"].gpu_ids == ("f-3",)
    assert all(len(tenants) == 1 for tenants in switch_tenants(p, result).values())


@pytest.mark.parametrize("solver", ["ilp", "genetic", "greedy"])
def test_a_job_the_switch_rule_keeps_off_its_chosen_gpus_takes_another_configuration(solver):
    """Two slow GPUs (100 W) on one switch, one fast GPU (300 W). The model, blind to switches,
    puts t's and u's jobs on the two slow GPUs; the switch goes to t, and u's job, rather than
    wait, takes the fast GPU (it meets T_min there too)."""
    slow = gpu_type("slow", tdp=100)
    preds = TablePredictions(taus={("a", t, 1, True): 10 for t in ("slow", "fast")})
    jobs = [job(1, "a", tenant="t", tmin=5), job(2, "a", tenant="u", tmin=5)]
    p = problem(jobs, node("slow", "s", 2, switch_every=2) + node("fast", "f", 1, switch_every=1), [slow, FAST], preds,
                topology_isolation=True, theta=1)
    result = get_solver(solver).solve(p)
    assert {pl.gpu_type for pl in result.placements.values()} == {"slow", "fast"}
    assert result.power_w == pytest.approx(400)
    assert any("took another meeting T_min" in note for note in result.notes)


@pytest.mark.parametrize("solver", ["ilp", "genetic", "greedy_efficient", "greedy"])
def test_a_higher_priority_claims_a_switch_before_lower_priorities_take_every_switch(solver):
    """Four GPUs on three switches: x-0, y-0, and z-0/z-1 on one. Tenant t has three jobs of
    priority 0, tenant u one of priority 1. Packed by job id, t's jobs would take x-0, y-0 and
    z-0, and u's job of the higher priority would wait (z-1 is on t's switch). Packed in
    admission order, u's job takes a switch first and all four run."""
    gpus = node("fast", "x", 1, switch_every=1) + node("fast", "y", 1, switch_every=1) + node("fast", "z", 2,
                                                                                              switch_every=2)
    jobs = [job(n, "a", tenant="t", tmin=5) for n in (1, 2, 3)] + [job(9, "a", tenant="u", tmin=5, priority=1)]
    p = problem(jobs, gpus, [FAST], PREDS, topology_isolation=True, theta=1)
    result = get_solver(solver).solve(p)
    assert sorted(result.placements) == ["1", "2", "3", "9"]
    assert all(len(tenants) == 1 for tenants in switch_tenants(p, result).values())


@pytest.mark.parametrize("solver", ["ilp", "genetic", "greedy_efficient", "greedy"])
def test_a_higher_priority_left_off_its_switch_retries_before_a_lower_priority_takes_its_alternative(solver):
    """Two slow GPUs (100 W) on one switch, held by tenant t's running job 1; one fast GPU (300 W).
    Job 2 (tenant u, priority 1) runs on both types, job 3 (tenant v, priority 0) on the fast one
    only, so the model, blind to switches, puts job 2 on the free slow GPU and job 3 on the fast
    one. The slow GPU is on t's switch: job 2 must retry, and the fast GPU is its only other
    configuration. Retried after every level has packed, job 3 would hold it and job 2 wait;
    placed level by level, job 2 runs on the fast GPU and job 3 waits, saying why."""
    slow = gpu_type("slow", tdp=100)
    preds = TablePredictions(taus={("a", "slow", 1, True): 10, ("a", "fast", 1, True): 10, ("b", "fast", 1, True): 10})
    jobs = [job(1, "a", tenant="t", tmin=5, current=(["s-0"], ())), job(2, "a", tenant="u", tmin=5, priority=1),
            job(3, "b", tenant="v", tmin=5)]
    p = problem(jobs, node("slow", "s", 2, switch_every=2) + node("fast", "f", 1, switch_every=1), [slow, FAST], preds,
                topology_isolation=True, theta=1)
    result = get_solver(solver).solve(p)
    assert sorted(result.placements) == ["1", "2"]
    assert result.placements["2"].gpu_ids == ("f-0",)
    assert "3" in result.reasons
    assert all(len(tenants) == 1 for tenants in switch_tenants(p, result).values())
