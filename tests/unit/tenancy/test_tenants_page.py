"""The console's Tenants page: staff see every tenant's row, a member only its own, each with
quota, GPUs in use and borrowed, shares, fair-share factor and energy against its budget; the
script's data is the live kind's."""
import json
import re

from django.test import Client
from django.urls import reverse


def page(user):
    client = Client()
    client.force_login(user)
    response = client.get(reverse("dashboard:tenants"))
    assert response.status_code == 200
    return response.content.decode()


def rows(body):
    return dict(re.findall(r'<tr data-tenant="([^"]+)">(.*?)</tr>', body))


def test_staff_see_every_tenant_with_use_borrowing_and_energy(staff, alice, bob, accounted, research, cluster, hold):
    research.energy_budget_kwh_month = 1.0
    research.save()
    hold(research, cluster[:3], alice)
    body = page(staff)
    shown = rows(body)
    assert set(shown) == {"research", "vision", "ops"}
    r = shown["research"]
    assert "v100 2" in r and 'class="in-use">v100 3<' in r and 'class="borrowed">v100 1<' in r
    assert "0.250" in r and "2.00 kWh" in r and "2.00 / 1.00 kWh" in r and "over budget" in r
    assert 'class="quota">k80 1, v100 2<' in shown["vision"]
    data = json.loads(re.search(r'<script id="tenants-data" type="application/json">(.*?)</script>', body).group(1))
    assert {t["slug"] for t in data["tenants"].values()} == {"research", "vision", "ops"}
    assert re.search(r'<a href="/dashboard/tenants/" aria-current="page">Tenants</a>', body)


def test_a_member_sees_only_its_own_tenant(alice, bob, accounted):
    body = page(alice)
    assert set(rows(body)) == {"research"} and "vision" not in body.split('id="tenants-data"')[1]


def test_a_user_of_no_tenant_sees_none(make_user, accounted):
    assert "You belong to no tenant." in page(make_user("nobody"))
