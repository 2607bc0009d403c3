"""Quotas over random small instances: quotas that bind nothing change no solver's plan; no
solver lets a tenant that may not borrow beyond its quota; and the ILP never leaves an owner's
job waiting that fits its tenant's quota left on a type while other tenants borrow GPUs there."""
from collections import defaultdict
from dataclasses import replace

from hypothesis import HealthCheck, given, settings, strategies as st

from scheduler.optimizer import SOLVERS, get_solver
from scheduler.optimizer.instance import compile_instance
from scheduler.optimizer.problem import QuotaSpec

from .test_properties import TYPES, instances

TENANTS = ["t", "u", "v"]


@st.composite
def quotas(draw, type_names):
    out = []
    for tenant in TENANTS:
        for name in type_names:
            if draw(st.booleans()):
                out.append(QuotaSpec(tenant, name, draw(st.integers(0, 4))))
    return tuple(out)


def held(p, plan) -> dict[tuple[str, str], int]:
    """GPUs per (tenant, type) a plan holds (a shared GPU counted once)."""
    tenant_of = {job.id: job.tenant for job in p.jobs}
    type_of = {g.id: g.gpu_type for g in p.gpus}
    gpus = {(tenant_of[pl.job_id], g) for pl in plan.placements.values() for g in pl.gpu_ids}
    out: dict[tuple[str, str], int] = defaultdict(int)
    for tenant, gpu in gpus:
        out[(tenant, type_of[gpu])] += 1
    return out


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances(), st.sampled_from(sorted(SOLVERS)))
def test_quotas_on_a_type_the_cluster_lacks_change_no_plan(p, solver):
    present = {g.gpu_type for g in p.gpus}
    absent = next((t.name for t in TYPES if t.name not in present), "h200")
    bound = replace(p, quotas=tuple(QuotaSpec(t, absent, 4) for t in TENANTS))
    plain, with_quotas = get_solver(solver).solve(p), get_solver(solver).solve(bound)
    assert with_quotas.placements == plain.placements
    assert with_quotas.reasons == plain.reasons
    assert abs(with_quotas.power_w - plain.power_w) < 1e-6


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.sampled_from(sorted(SOLVERS)))
def test_no_solver_lets_a_tenant_that_may_not_borrow_beyond_its_quota(data, solver):
    p = data.draw(instances())
    p = replace(p, quotas=data.draw(quotas(sorted({g.gpu_type for g in p.gpus}))),
                no_borrowing=frozenset(data.draw(st.lists(st.sampled_from(TENANTS), max_size=2))))
    plan = get_solver(solver).solve(p)
    nominal = {(q.tenant, q.gpu_type): q.gpus for q in p.quotas}
    for (tenant, gpu_type), n in held(p, plan).items():
        if tenant in p.no_borrowing:
            assert n <= nominal.get((tenant, gpu_type), 0)
    assert set(plan.placements) | set(plan.reasons) == {job.id for job in p.jobs}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_an_owner_within_its_quota_never_waits_while_others_borrow_its_type(data):
    """One GPU per job and no sharing, so the aggregated model is exact about GPUs."""
    p = data.draw(instances())
    p = replace(p, jobs=tuple(replace(job, max_gpus=1) for job in p.jobs),
                settings=replace(p.settings, theta=1, topology_isolation=False, time_limit_s=30.0),
                quotas=data.draw(quotas(sorted({g.gpu_type for g in p.gpus}))))
    plan = get_solver("ilp").solve(p)
    if plan.status != "optimal":
        return
    nominal = {(q.tenant, q.gpu_type): q.gpus for q in p.quotas}
    use = held(p, plan)
    inst = compile_instance(p)
    for j, job in enumerate(inst.jobs):
        if job.id in plan.placements:
            continue
        for i in inst.job_options[j]:
            gpu_type = inst.all_options[i].gpu_type
            quota_left = nominal.get((job.tenant, gpu_type), 0) - use.get((job.tenant, gpu_type), 0)
            borrowed = sum(max(0, n - nominal.get((t, g), 0)) for (t, g), n in use.items()
                           if g == gpu_type and t != job.tenant)
            assert not (quota_left >= 1 and borrowed >= 1), (job.id, gpu_type, plan.reasons[job.id])
