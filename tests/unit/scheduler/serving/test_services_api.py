"""/api/services/: create (400 with field messages for every bad input, never a 500), list and
read scoped to the caller's tenant (staff: all), stop; the jobs API names a replica's service."""
from datetime import timedelta

import pytest
from django.utils import timezone

from scheduler.lifecycle import JobState
from scheduler.models import Allocation, Job, Service, ServiceTraffic

pytestmark = pytest.mark.django_db

BODY = {"name": "ranker", "workload": "ResNet-50 (batch size 64)", "latency_bound_ms": 500.0, "min_replicas": 1,
        "max_replicas": 4, "expected_rate_rps": 100.0}


@pytest.fixture
def create(client_for, measured, resnet50):
    def post(user, **fields):
        return client_for(user).post("/api/services/", {**BODY, **fields}, format="json")

    return post


def test_anonymous_callers_get_401(client_for, measured):
    assert client_for().get("/api/services/").status_code == 401
    assert client_for().post("/api/services/", BODY, format="json").status_code == 401
    assert not Service.objects.exists()


def test_a_created_service_reads_back_with_its_replicas(create, alice):
    response = create(alice, min_replicas=2, environment={"TOKEN": "secret"})
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["tenant"] == "research" and body["owner"] == "alice" and body["batch_size"] == 64
    assert body["environment"] == {"TOKEN": None} and body["state"] == "active"
    assert body["target_p99_ms"] == pytest.approx(500.0 / 1.2) and body["slo_met"] is None
    assert [replica["state"] for replica in body["replicas"]] == ["pending", "pending"]
    assert {replica["id"] for replica in body["replicas"]} == set(Job.objects.values_list("pk", flat=True))


@pytest.mark.parametrize("fields, field", [
    ({"min_replicas": 3, "max_replicas": 2}, "min_replicas"),
    ({"min_replicas": 3, "max_replicas": 2}, "max_replicas"),
    ({"max_replicas": 65}, "max_replicas"),
    ({"max_replicas": 10**30}, "max_replicas"),
    ({"latency_bound_ms": 0}, "latency_bound_ms"),
    ({"latency_bound_ms": -1}, "latency_bound_ms"),
    ({"latency_bound_ms": 50}, "latency_bound_ms"),  # below what a V100 answers a batch in
    ({"latency_bound_ms": "fast"}, "latency_bound_ms"),
    ({"workload": "nope"}, "workload"),
    ({"batch_size": 0}, "batch_size"),
    ({"expected_rate_rps": -3}, "expected_rate_rps"),
    ({"environment": {"1BAD": "x"}}, "environment"),
    ({"replicas": 3}, "replicas"),
    ({"name": ""}, "name"),
])
def test_bad_input_is_a_400_naming_the_field_and_writes_nothing(create, alice, fields, field):
    response = create(alice, **fields)
    assert response.status_code == 400, response.content
    assert response.json()[field]
    assert not Service.objects.exists() and not Job.objects.exists()


def test_the_unmeetable_bound_message_says_which_type_and_what_it_allows(create, alice):
    [message] = create(alice, latency_bound_ms=50).json()["latency_bound_ms"]
    assert "v100" in message and "129 ms" in message


def test_lists_and_details_are_scoped_to_the_tenant_and_staff_see_all(create, client_for, alice, bob, staff):
    mine = create(alice).json()["id"]
    theirs = create(bob, name="other").json()["id"]
    assert [s["id"] for s in client_for(alice).get("/api/services/").json()["results"]] == [mine]
    assert {s["id"] for s in client_for(staff).get("/api/services/").json()["results"]} == {mine, theirs}
    assert client_for(alice).get(f"/api/services/{theirs}/").status_code == 404
    assert client_for(alice).post(f"/api/services/{theirs}/stop/").status_code == 404
    assert Service.objects.get(pk=theirs).state == "active"


def test_the_detail_shows_the_replicas_gpus_and_the_last_hour_of_traffic(create, client_for, alice, measured):
    service = Service.objects.get(pk=create(alice).json()["id"])
    replica = service.replicas.get()
    gpu = measured[0]
    Allocation.objects.create(job=replica, gpu=gpu, start=timezone.now())
    now = timezone.now()
    ServiceTraffic.objects.create(service=service, job=replica, at=now - timedelta(minutes=5), request_rate_rps=80,
                                  p99_ms=40)
    ServiceTraffic.objects.create(service=service, job=replica, at=now - timedelta(hours=2), request_rate_rps=10)
    body = client_for(alice).get(f"/api/services/{service.pk}/").json()
    assert body["replicas"][0]["gpus"] == [{"gpu": gpu.uuid, "node": "v100-a", "gpu_type": "v100", "partners": []}]
    assert [(t["request_rate_rps"], t["p99_ms"], t["job"]) for t in body["traffic"]] == [(80.0, 40.0, replica.pk)]


def test_stop_cancels_the_replicas_and_a_second_stop_is_a_409(create, client_for, alice):
    service_id = create(alice, min_replicas=2).json()["id"]
    response = client_for(alice).post(f"/api/services/{service_id}/stop/")
    assert response.status_code == 200 and response.json()["state"] == "stopped"
    assert response.json()["replicas"] == []
    assert set(Job.objects.values_list("state", flat=True)) == {JobState.CANCELLED.value}
    again = client_for(alice).post(f"/api/services/{service_id}/stop/")
    assert again.status_code == 409 and "already stopped" in again.json()["detail"]


def test_the_jobs_api_names_a_replicas_service(create, client_for, alice, submit):
    service_id = create(alice).json()["id"]
    training = submit(alice).json()["id"]
    jobs = {job["id"]: job["service"] for job in client_for(alice).get("/api/jobs/").json()["results"]}
    assert jobs[training] is None and set(jobs.values()) == {None, service_id}
