"""The console's Services page: staff see every active service, a member its tenant's, each with
its traffic, P99 against its bound (marked over or under), replicas target and live, the GPUs
its replicas hold and their partners; a chart per service; the script's data is the live kind's."""
import json
import re

from django.test import Client
from django.urls import reverse

from scheduler.models import Job, Service

# `as` marks the fixtures re-exported, for pytest to find by name.
from .console import detector as detector, ranker as ranker


def page(user):
    client = Client()
    client.force_login(user)
    response = client.get(reverse("dashboard:services"))
    assert response.status_code == 200
    return response.content.decode()


def rows(body):
    return {int(pk): row for pk, row in re.findall(r'<tr data-service="(\d+)">(.*?)</tr>', body)}


def cell(row, name):
    return re.sub(r"<[^>]+>", "", re.search(rf'<td class="{name}">(.*?)</td>', row).group(1))


def page_data(body):
    return json.loads(re.search(r'<script id="services-data" type="application/json">(.*?)</script>', body).group(1))


def test_staff_see_every_service_with_traffic_latency_replicas_and_partners(staff, ranker, detector):
    body = page(staff)
    shown = rows(body)
    assert set(shown) == {ranker.pk, detector.pk}
    r = shown[ranker.pk]
    training = Job.objects.get(service__isnull=True)
    assert cell(r, "traffic") == "120.0 (150.0)"
    assert cell(r, "p99") == "42.0 / 50.0 ms under" and "slo-met" in r
    assert cell(r, "replicas") == "2 / 1 (1-4)"
    assert "running v100 on v100-a" in cell(r, "placement") and "pending" in cell(r, "placement")
    assert cell(r, "partners") == f"job {training.pk} LM (batch size 20) (training)"
    assert cell(r, "tmin") == "9.50 steps/s"
    d = shown[detector.pk]
    assert cell(d, "p99") == "31.5 / 20.0 ms over" and "slo-violated" in d
    assert cell(d, "placement") == "-" and cell(d, "partners") == "-"
    assert f'id="service-plot-{ranker.pk}"' in body and f'id="service-plot-{detector.pk}"' in body
    assert set(page_data(body)["services"]) == {str(ranker.pk), str(detector.pk)}
    assert re.search(r'<a href="/dashboard/services/" aria-current="page">Services</a>', body)


def test_a_member_sees_only_its_tenants_services(alice, ranker, detector):
    body = page(alice)
    assert set(rows(body)) == {ranker.pk} and "detector" not in body
    assert set(page_data(body)["services"]) == {str(ranker.pk)}


def test_a_stopped_service_is_not_shown_and_no_report_is_said(bob, detector):
    Service.objects.filter(pk=detector.pk).update(p99_ms=None)
    assert "no report" in cell(rows(page(bob))[detector.pk], "p99")
    Service.objects.filter(pk=detector.pk).update(state="stopped")
    assert "No active service you can see." in page(bob)


def test_a_user_of_no_tenant_sees_none(make_user, ranker):
    body = page(make_user("nobody"))
    assert rows(body) == {} and page_data(body)["services"] == {}
