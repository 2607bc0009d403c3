"""/metrics: per tenant its energy this month and fair-share factor, and per GPU type its quota,
GPUs in use and borrowed, read at scrape time."""
from tests.unit.scheduler.test_restart_metrics import scrape


def test_tenant_families(client_for, staff, accounted, research, vision, cluster, hold, alice, bob):
    hold(research, cluster[:3], alice)
    hold(vision, cluster[4:5], bob)
    types, metrics = scrape(client_for(staff))
    for name in ("gogh_tenant_energy_kwh", "gogh_tenant_fair_share_factor", "gogh_tenant_quota_gpus",
                 "gogh_tenant_gpus_in_use", "gogh_tenant_gpus_borrowed"):
        assert types[name] == "gauge", name
    assert metrics[("gogh_tenant_energy_kwh", (("tenant", "research"),))] == 2.0  # 40 days ago: another month
    assert metrics[("gogh_tenant_energy_kwh", (("tenant", "vision"),))] == 5.0
    assert metrics[("gogh_tenant_fair_share_factor", (("tenant", "research"),))] == 0.25
    assert metrics[("gogh_tenant_fair_share_factor", (("tenant", "ops"),))] == 1.0
    assert metrics[("gogh_tenant_quota_gpus", (("gpu_type", "k80"), ("tenant", "vision")))] == 1
    assert metrics[("gogh_tenant_gpus_in_use", (("gpu_type", "v100"), ("tenant", "research")))] == 3
    assert metrics[("gogh_tenant_gpus_borrowed", (("gpu_type", "v100"), ("tenant", "research")))] == 1
    assert ("gogh_tenant_gpus_borrowed", (("gpu_type", "k80"), ("tenant", "vision"))) not in metrics
