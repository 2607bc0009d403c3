"""Tenants in the admin: shares, borrowing, budget and quotas edited (a quota on a type the
cluster lacks refused), usage and this month's energy shown read-only, energy days listed."""
from gogh_web.events.models import Event
from scheduler.models import SolverConfig, SolverConfigChange, Tenant, TenantQuota
from tests.unit.scheduler.test_solver_settings_admin import settings_form


def tenant_form(tenant, **changes):
    quotas = list(tenant.quotas.order_by("gpu_type__name"))
    form = {"name": tenant.name, "slug": tenant.slug, "description": "", "shares": tenant.shares,
            "may_borrow": "on", "energy_budget_kwh_month": "",
            "quotas-TOTAL_FORMS": str(len(quotas)), "quotas-INITIAL_FORMS": str(len(quotas)),
            "memberships-TOTAL_FORMS": "0", "memberships-INITIAL_FORMS": "0"}
    for i, quota in enumerate(quotas):
        form.update({f"quotas-{i}-id": quota.pk, f"quotas-{i}-tenant": tenant.pk,
                     f"quotas-{i}-gpu_type": quota.gpu_type_id, f"quotas-{i}-gpus": quota.gpus})
    form.update(changes)
    return form


def add_quota(form, index, gpu_type, gpus):
    form.update({"quotas-TOTAL_FORMS": str(index + 1), f"quotas-{index}-gpu_type": gpu_type.pk,
                 f"quotas-{index}-gpus": gpus})
    return form


def test_the_tenant_page_shows_usage_and_energy(client, root, accounted, research):
    page = client.get(f"/admin/scheduler/tenant/{research.pk}/change/").content.decode()
    assert "Fair-share factor" in page and "0.250" in page  # TenantUsage.factor
    assert "Energy this month (UTC), kWh" in page and "2.00" in page
    listing = client.get("/admin/scheduler/tenant/").content.decode()
    assert "0.250" in listing


def test_shares_budget_and_a_quota_saved_with_a_live_event(client, root, accounted, research, cluster, k80,
                                                          django_capture_on_commit_callbacks):
    form = add_quota(tenant_form(research, shares="3", energy_budget_kwh_month="50"), 1, k80, 1)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/admin/scheduler/tenant/{research.pk}/change/", form)
    assert response.status_code == 302, response.content.decode()[:3000]
    research.refresh_from_db()
    assert (research.shares, research.energy_budget_kwh_month) == (3, 50.0)
    assert sorted(research.quotas.values_list("gpu_type__name", "gpus")) == [("k80", 1), ("v100", 2)]
    assert Event.objects.get(kind="tenant").data["shares"] == 3


def test_a_quota_on_a_type_the_cluster_lacks_is_refused(client, root, accounted, research, cluster, p100):
    form = add_quota(tenant_form(research, shares="5"), 1, p100, 1)
    response = client.post(f"/admin/scheduler/tenant/{research.pk}/change/", form)
    assert response.status_code == 200 and "The cluster has no GPU of type" in response.content.decode()
    research.refresh_from_db()
    assert research.shares == 1 and not TenantQuota.objects.filter(gpu_type=p100).exists()


def test_energy_days_are_listed_read_only(client, root, accounted):
    assert client.get("/admin/scheduler/tenantenergyday/").status_code == 200
    assert client.get("/admin/scheduler/tenantenergyday/add/").status_code == 403


def test_the_half_life_is_a_solver_setting_of_the_admin_and_0_is_refused(client, root):
    config = SolverConfig.load()
    url = f"/admin/scheduler/solverconfig/{config.pk}/change/"
    response = client.post(url, settings_form(config, fair_share_half_life_h="0"))
    assert response.status_code == 200 and "fair_share_half_life_h" in response.content.decode()
    assert SolverConfig.load().fair_share_half_life_h == 168.0 and not SolverConfigChange.objects.exists()
    assert client.post(url, settings_form(config, fair_share_half_life_h="72")).status_code == 302
    assert SolverConfig.load().fair_share_half_life_h == 72.0


def test_the_list_reads_every_tenants_standing_in_one_query(client, root, accounted, django_assert_max_num_queries):
    for i in range(10):
        Tenant.objects.create(name=f"Alpha {i}", slug=f"alpha-{i}")
    with django_assert_max_num_queries(12):
        listing = client.get("/admin/scheduler/tenant/?o=6").content.decode()  # sorted by the factor
    assert listing.index("Research") < listing.index("Alpha 0")  # its factor 0.25 before the others' 1
