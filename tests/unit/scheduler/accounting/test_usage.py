"""Decayed usage, fair-share factors and energy budgets, as the pass writes them (the worked
example of docs/accounting.md)."""
from datetime import timedelta

import pytest

from scheduler.accounting.services import accounting_pass
from scheduler.models import SolverConfig, Tenant, TenantEnergyDay, TenantUsage

from .conftest import T0, allocate, at, samples


def tenants(**spec):
    """tenants(a=(shares, weighted GPU-hours), ...): tenants with usage counted up to T0."""
    for slug, (shares, hours) in spec.items():
        tenant = Tenant.objects.create(slug=slug, name=slug, shares=shares)
        TenantUsage.objects.create(tenant=tenant, gpu_hours=hours, energy_kwh=hours / 10, updated_at=T0)


def factors():
    return {row.tenant.slug: row.factor for row in TenantUsage.objects.select_related("tenant")}


def test_stored_usage_halves_over_one_half_life(db):
    tenants(a=(1, 8.0))
    config = SolverConfig.load()
    config.fair_share_half_life_h = 2.0
    config.save()
    accounting_pass(now=T0 + timedelta(hours=2), settle_s=0)
    row = TenantUsage.objects.get()
    assert (row.gpu_hours, row.energy_kwh, row.updated_at) == (pytest.approx(4.0), pytest.approx(0.4),
                                                               T0 + timedelta(hours=2))


def test_the_worked_example_of_the_docs(db):
    tenants(a=(2, 50.0), b=(1, 40.0), c=(1, 10.0))
    accounting_pass(now=T0, settle_s=0)
    assert factors() == {"a": pytest.approx(0.5), "b": pytest.approx(2 ** -1.6), "c": pytest.approx(2 ** -0.4)}
    assert 2 ** -1.6 == pytest.approx(0.3299, abs=1e-4) and 2 ** -0.4 == pytest.approx(0.7579, abs=1e-4)


def test_a_tenant_over_its_energy_budget_counts_fewer_shares(db):
    tenants(a=(2, 50.0), b=(1, 40.0), c=(1, 10.0))
    Tenant.objects.filter(slug="b").update(energy_budget_kwh_month=100.0)
    TenantEnergyDay.objects.create(tenant=Tenant.objects.get(slug="b"), day=T0.date().replace(day=1), energy_kwh=200)
    TenantEnergyDay.objects.create(  # last month's energy is not this month's
        tenant=Tenant.objects.get(slug="c"), day=T0.date().replace(day=1) - timedelta(days=1), energy_kwh=1e6,
    )
    Tenant.objects.filter(slug="c").update(energy_budget_kwh_month=1.0)
    accounting_pass(now=T0, settle_s=0)
    # b's shares 1 x 100 / 200 = 0.5 of 3.5: U 0.4, S 1/7
    assert factors() == {
        "a": pytest.approx(2 ** -(0.5 / (2 / 3.5))), "b": pytest.approx(2 ** -(0.4 * 7)), "c": pytest.approx(
            2 ** -(0.1 / (1 / 3.5))),
    }
    assert factors()["b"] == pytest.approx(0.1436, abs=1e-4)


def test_within_budget_nothing_changes(db):
    tenants(a=(2, 50.0), b=(1, 40.0), c=(1, 10.0))
    Tenant.objects.filter(slug="b").update(energy_budget_kwh_month=300.0)
    TenantEnergyDay.objects.create(tenant=Tenant.objects.get(slug="b"), day=T0.date(), energy_kwh=200)
    accounting_pass(now=T0, settle_s=0)
    assert factors()["b"] == pytest.approx(2 ** -1.6)


def test_new_usage_is_added_decayed_from_the_end_of_its_span(gpus, make_job):
    job = make_job()
    config = SolverConfig.load()
    config.fair_share_half_life_h = 1.0
    config.save()
    allocate(job, gpus[0], 0, 3600)  # one V100-hour: 1 unit, drawn until 1 h
    samples(gpus[0], 0, 3600, 300.0, every_s=5)
    accounting_pass(now=at(7200), settle_s=0, max_span_s=3600)  # one half-life later
    row = TenantUsage.objects.get(tenant=job.tenant)
    assert (row.gpu_hours, row.energy_kwh) == (pytest.approx(0.5), pytest.approx(0.3 / 2))


def test_every_tenant_gets_a_usage_row_and_the_one_without_usage_has_factor_one(gpus, make_job):
    allocate(make_job("research"), gpus[0], 0, 600)
    Tenant.objects.create(slug="idle", name="Idle")
    accounting_pass(now=at(3600), settle_s=0)
    assert factors() == {"research": pytest.approx(0.5 ** 2), "idle": 1.0}
