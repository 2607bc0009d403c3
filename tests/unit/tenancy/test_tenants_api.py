"""GET /api/tenants/ and its detail, the energy bill, and the staff's changes: shares, borrowing,
budget, quotas and the fair-share half-life. Every refusal is a 400 naming the field, or a
403/404, and writes nothing."""
from datetime import date

import pytest

from scheduler.models import Job, SolverConfig, SolverConfigChange, Tenant, TenantEnergyDay, TenantQuota


def by_slug(body):
    return {t["slug"]: t for t in body["results"]}


def test_staff_see_every_tenant_with_quotas_use_borrowing_and_energy(client_for, staff, accounted, research, vision,
                                                                      cluster, hold, alice, bob):
    hold(research, cluster[:3], alice)  # 3 V100 on a quota of 2: one borrowed
    shared = hold(research, cluster[2:3], alice, state="placed")  # shares a GPU already counted
    hold(research, cluster[4:5], alice, state="pending")  # a stale allocation of a pending job: not held
    hold(vision, cluster[5:6], bob)
    assert shared.allocations.count() == 1
    tenants = by_slug(client_for(staff).get("/api/tenants/").json())
    assert set(tenants) == {"ops", "research", "vision"}
    r = tenants["research"]
    assert r["quotas"] == [{"gpu_type": "v100", "gpus": 2}]
    assert r["in_use"] == {"v100": 3} and r["borrowed"] == {"v100": 1}
    assert r["fair_share"]["factor"] == 0.25 and r["fair_share"]["gpu_hours"] == 40.0
    assert r["energy"]["today_kwh"] == 2.0 and r["energy"]["month_kwh"] == 2.0
    v = tenants["vision"]
    assert v["in_use"] == {"k80": 1} and v["borrowed"] == {}
    assert v["energy"] == {"today_kwh": 5.0, "month_kwh": 5.0, "budget_left_kwh": None, "over_budget": False}
    ops = tenants["ops"]  # no usage row yet: the defaults
    assert ops["fair_share"] == {"factor": 1.0, "gpu_hours": 0.0, "energy_kwh": 0.0, "updated_at": None}
    assert ops["quotas"] == [] and ops["in_use"] == {}


def test_budget_left_and_over_budget(client_for, alice, accounted, research):
    research.energy_budget_kwh_month = 1.5
    research.save()
    energy = client_for(alice).get("/api/tenants/research/").json()["energy"]
    assert energy["budget_left_kwh"] == 0.0 and energy["over_budget"] is True
    Tenant.objects.filter(pk=research.pk).update(energy_budget_kwh_month=10.0)
    energy = client_for(alice).get("/api/tenants/research/").json()["energy"]
    assert energy["budget_left_kwh"] == 8.0 and energy["over_budget"] is False


def test_a_member_sees_only_its_own_tenant(client_for, alice, accounted):
    client = client_for(alice)
    assert list(by_slug(client.get("/api/tenants/").json())) == ["research"]
    assert client.get("/api/tenants/research/").status_code == 200
    assert client.get("/api/tenants/vision/").status_code == 404
    assert client.get("/api/tenants/vision/energy/").status_code == 404


def test_anonymous_gets_401(client_for, accounted):
    assert client_for(None).get("/api/tenants/").status_code == 401


def test_energy_bill_per_day_and_per_month(client_for, alice, research):
    for day, kwh in ((date(2025, 1, 31), 1.0), (date(2025, 2, 1), 2.0), (date(2025, 2, 20), 4.0),
                     (date(2025, 3, 1), 8.0)):
        TenantEnergyDay.objects.create(tenant=research, day=day, energy_kwh=kwh, gpu_hours=kwh * 10)
    client = client_for(alice)
    daily = client.get("/api/tenants/research/energy/?from=2025-02-01&to=2025-02-28").json()
    assert [p["period"] for p in daily["periods"]] == ["2025-02-01", "2025-02-20"]
    assert daily["energy_kwh"] == 6.0 and daily["gpu_hours"] == 60.0
    assert daily["from"] == "2025-02-01" and daily["to"] == "2025-02-28" and daily["by"] == "day"
    monthly = client.get("/api/tenants/research/energy/?from=2025-01-01&to=2025-03-31&by=month").json()
    assert monthly["periods"] == [
        {"period": "2025-01", "energy_kwh": 1.0, "gpu_hours": 10.0},
        {"period": "2025-02", "energy_kwh": 6.0, "gpu_hours": 60.0},
        {"period": "2025-03", "energy_kwh": 8.0, "gpu_hours": 80.0},
    ]


@pytest.mark.parametrize(
    "query,field,message",
    [
        ("from=2025-02-30", "from", "Date has wrong format"),
        ("to=yesterday", "to", "Date has wrong format"),
        ("from=2025-03-01&to=2025-02-01", "from", "Must not be after `to`."),
        ("from=1990-01-01&to=2025-01-01", "from", "At most 3660 days"),
        ("by=week", "by", "is not a valid choice"),
    ],
)
def test_bad_energy_queries_get_400_naming_the_field(client_for, alice, research, query, field, message):
    response = client_for(alice).get(f"/api/tenants/research/energy/?{query}")
    assert response.status_code == 400, response.content
    assert message in " ".join(response.json()[field])


def test_staff_change_shares_borrowing_and_budget(client_for, staff, research):
    response = client_for(staff).patch("/api/tenants/research/", {"shares": 3, "may_borrow": False,
                                                                  "energy_budget_kwh_month": 120.5}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["shares"] == 3 and response.json()["may_borrow"] is False
    research.refresh_from_db()
    assert (research.shares, research.may_borrow, research.energy_budget_kwh_month) == (3, False, 120.5)
    client_for(staff).patch("/api/tenants/research/", {"energy_budget_kwh_month": None}, format="json")
    research.refresh_from_db()
    assert research.energy_budget_kwh_month is None and research.shares == 3


@pytest.mark.parametrize(
    "body,field,message",
    [
        ({"shares": 0}, "shares", "greater than or equal to 1"),
        ({"shares": -2}, "shares", "greater than or equal to 1"),
        ({"shares": 1.5}, "shares", "A whole number is required."),
        ({"shares": "3"}, "shares", "A whole number is required."),
        ({"shares": 2**40}, "shares", "less than or equal to"),
        ({"may_borrow": "perhaps"}, "may_borrow", "valid boolean"),
        ({"energy_budget_kwh_month": -1}, "energy_budget_kwh_month", "greater than or equal to 0"),
        ({"energy_budget_kwh_month": "NaN"}, "energy_budget_kwh_month", "finite"),
        ({"name": "Other"}, "name", "Unknown field."),
        ({}, "non_field_errors", "Nothing to change"),
    ],
)
def test_bad_settings_get_400_and_change_nothing(client_for, staff, research, body, field, message):
    response = client_for(staff).patch("/api/tenants/research/", body, format="json")
    assert response.status_code == 400, response.content
    assert message in " ".join(response.json()[field])
    research.refresh_from_db()
    assert (research.shares, research.may_borrow, research.energy_budget_kwh_month) == (1, True, None)


def test_staff_replace_the_quota_set(client_for, staff, accounted, vision, cluster):
    response = client_for(staff).put("/api/tenants/vision/quotas/", [{"gpu_type": "k80", "gpus": 2},
                                                                     {"gpu_type": "v100", "gpus": 0}], format="json")
    assert response.status_code == 200, response.content
    assert response.json() == [{"gpu_type": "k80", "gpus": 2}, {"gpu_type": "v100", "gpus": 0}]
    assert sorted(TenantQuota.objects.filter(tenant=vision).values_list("gpu_type__name", "gpus")) == [
        ("k80", 2), ("v100", 0)]
    response = client_for(staff).put("/api/tenants/vision/quotas/", [], format="json")
    assert response.status_code == 200 and not TenantQuota.objects.filter(tenant=vision).exists()


def test_quotas_may_add_up_above_the_cluster(client_for, staff, accounted, cluster):
    response = client_for(staff).put("/api/tenants/research/quotas/", [{"gpu_type": "v100", "gpus": 4}], format="json")
    assert response.status_code == 200, response.content
    assert sum(TenantQuota.objects.filter(gpu_type__name="v100").values_list("gpus", flat=True)) == 6  # of 4


def quota_rows():
    return sorted(TenantQuota.objects.values_list("tenant__slug", "gpu_type__name", "gpus"))


@pytest.mark.parametrize(
    "body,message",
    [
        ([{"gpu_type": "p100", "gpus": 1}], "The cluster has no GPU of type 'p100'"),
        ([{"gpu_type": "h100", "gpus": 1}], "Unknown GPU type 'h100'."),
        ([{"gpu_type": "v100", "gpus": -1}], "greater than or equal to 0"),
        ([{"gpu_type": "v100", "gpus": 1.5}], "A whole number is required."),
        ([{"gpu_type": "v100", "gpus": "2"}], "A whole number is required."),
        ([{"gpu_type": "v100", "gpus": 2**40}], "less than or equal to"),
        ([{"gpu_type": "v100"}], "This field is required."),
        ([{"gpu_type": "v100", "gpus": 1, "tenant": "x"}], "Unknown field."),
        ([{"gpu_type": "k80", "gpus": 1}, {"gpu_type": "k80", "gpus": 2}], "GPU type 'k80' is given more than once."),
        ({"gpu_type": "k80", "gpus": 1}, "Expected a list of items"),
    ],
)
def test_bad_quotas_get_400_and_write_nothing(client_for, staff, accounted, cluster, p100, body, message):
    before = quota_rows()
    response = client_for(staff).put("/api/tenants/research/quotas/", body, format="json")
    assert response.status_code == 400, response.content
    assert "quotas" in response.json()
    assert message in str(response.json()["quotas"])
    assert quota_rows() == before


def test_a_quota_on_a_type_whose_gpus_are_all_disabled_is_refused(client_for, staff, research, cluster):
    for gpu in cluster[4:]:
        gpu.state = "disabled"
        gpu.save()
    response = client_for(staff).put("/api/tenants/research/quotas/", [{"gpu_type": "k80", "gpus": 1}], format="json")
    assert response.status_code == 400 and "no GPU of type 'k80'" in str(response.json())
    assert not TenantQuota.objects.exists()


@pytest.mark.parametrize("who", ["alice", "bob"])
def test_members_may_not_change_any_tenant(client_for, alice, bob, research, cluster, who):
    client = client_for({"alice": alice, "bob": bob}[who])
    assert client.patch("/api/tenants/research/", {"shares": 5}, format="json").status_code == 403
    put = client.put("/api/tenants/research/quotas/", [{"gpu_type": "v100", "gpus": 1}], format="json")
    assert put.status_code == 403
    research.refresh_from_db()
    assert research.shares == 1 and not TenantQuota.objects.exists()


def test_staff_set_the_fair_share_half_life_audited(client_for, staff, alice):
    assert client_for(alice).get("/api/fair-share/").json() == {"half_life_h": 168.0}
    response = client_for(staff).patch("/api/fair-share/", {"half_life_h": 24}, format="json")
    assert response.status_code == 200 and response.json() == {"half_life_h": 24.0}
    assert SolverConfig.load().fair_share_half_life_h == 24.0
    change = SolverConfigChange.objects.get()
    assert (change.field, change.old_value, change.new_value, change.changed_by) == (
        "fair_share_half_life_h", "168.0", "24.0", staff)


@pytest.mark.parametrize("value,message", [(0, "greater than or equal to 0.01"), (-5, "greater than or equal to 0.01"),
                                           (10**6, "less than or equal to 8760"), ("soon", "valid number")])
def test_a_bad_half_life_gets_400_and_changes_nothing(client_for, staff, value, message):
    response = client_for(staff).patch("/api/fair-share/", {"half_life_h": value}, format="json")
    assert response.status_code == 400 and message in " ".join(response.json()["half_life_h"])
    assert SolverConfig.load().fair_share_half_life_h == 168.0 and not SolverConfigChange.objects.exists()


def test_members_may_not_set_the_half_life(client_for, alice):
    assert client_for(alice).patch("/api/fair-share/", {"half_life_h": 1}, format="json").status_code == 403


def test_jobs_show_their_energy(submit, alice, client_for):
    job_id = submit(alice).json()["id"]
    Job.objects.filter(pk=job_id).update(energy_kwh=1.25)
    assert client_for(alice).get(f"/api/jobs/{job_id}/").json()["energy_kwh"] == 1.25


def test_the_list_costs_the_same_queries_for_many_tenants(client_for, staff, accounted, django_assert_max_num_queries):
    for i in range(30):
        Tenant.objects.create(name=f"Team {i}", slug=f"team-{i}")
    client = client_for(staff)
    with django_assert_max_num_queries(12):
        assert client.get("/api/tenants/").json()["count"] == 33
