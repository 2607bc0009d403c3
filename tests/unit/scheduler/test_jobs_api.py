"""POST/GET /api/jobs/: submission, bad input, tenancy, idempotency, cancel."""
import json
from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from scheduler.models import Job


def test_submit_returns_201_with_state(submit, alice):
    response = submit(alice, priority=3, total_steps=1000, name="r50")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["state"] == "pending" and body["pending_reason"]
    assert body["workload"] == "ResNet-50 (batch size 64)"
    assert body["tenant"] == "research" and body["owner"] == "alice"
    assert body["priority"] == 3 and body["total_steps"] == 1000
    assert Job.objects.get(pk=body["id"]).owner == alice


def test_anonymous_requests_get_401(client_for, cluster):
    client = client_for(None)
    assert client.get("/api/jobs/").status_code == 401
    assert client.post("/api/jobs/", {}, format="json").status_code == 401


@pytest.mark.parametrize(
    "fields,field,message",
    [
        ({"workload": "GPT-9 (batch size 1)"}, "workload", "Unknown workload"),
        ({"workload": 17}, "workload", "Unknown workload"),
        ({"min_throughput": 0}, "min_throughput", "between 1e-05 and 1e+06"),
        ({"min_throughput": -3.5}, "min_throughput", "between 1e-05 and 1e+06"),
        ({"min_throughput": 5e-324}, "min_throughput", "between 1e-05 and 1e+06"),
        ({"min_throughput": 1e308}, "min_throughput", "between 1e-05 and 1e+06"),
        ({"min_throughput": "fast"}, "min_throughput", "valid number"),
        ({"min_throughput": None}, "min_throughput", "null"),
        ({"max_gpus": 0}, "max_gpus", "greater than or equal to 1"),
        ({"max_gpus": 7}, "max_gpus", "The cluster has 6 GPUs"),
        ({"max_gpus": 1.5}, "max_gpus", "valid integer"),
        ({"total_steps": 0}, "total_steps", "greater than or equal to 1"),
        ({"total_steps": 2**63}, "total_steps", "less than or equal to 9223372036854775807"),
        ({"memory_gb": 0}, "memory_gb", "greater than 0"),
        ({"memory_gb": "NaN"}, "memory_gb", "finite"),
        ({"memory_gb": 17}, "memory_gb", "No GPU of the cluster has more than 16 GB"),
        ({"priority": 10**6}, "priority", "less than or equal to 1000"),
        ({"deadline": "2001-01-01T00:00:00Z"}, "deadline", "in the past"),
        ({"deadline": "next tuesday"}, "deadline", "Datetime has wrong format"),
        ({"deadline": "2099-01-01T00:00:00"}, "deadline", "Give a timezone"),
        ({"environment": {"A=B": "x"}}, "environment", "Invalid variable name"),
        ({"environment": {f"V{i}": "x" for i in range(257)}}, "environment", "At most 256 variables"),
        ({"max_gpu": 2}, "max_gpu", "Unknown field"),
        ({"tenant": "vision"}, "tenant", "Unknown field"),
    ],
)
def test_bad_fields_get_400_naming_the_field(submit, alice, fields, field, message):
    response = submit(alice, **fields)
    assert response.status_code == 400, response.content
    errors = response.json()
    assert field in errors, errors
    assert message in " ".join(errors[field])
    assert not Job.objects.exists()


def test_missing_required_fields_are_each_named(client_for, alice, cluster):
    response = client_for(alice).post("/api/jobs/", {}, format="json")
    assert response.status_code == 400
    assert set(response.json()) == {"workload", "min_throughput", "max_gpus"}


@pytest.mark.parametrize(
    "raw", ['{"workload": ', "[1, 2]", '"text"', '{"min_throughput": NaN}', "\xff\xfe", "[" * 100_000 + "]" * 100_000]
)
def test_malformed_json_gets_400(client_for, alice, cluster, raw):
    response = client_for(alice).generic("POST", "/api/jobs/", raw.encode("latin-1"), content_type="application/json")
    assert response.status_code == 400, response.content
    assert not Job.objects.exists()


def test_nan_number_is_refused(client_for, alice, cluster, resnet50):
    raw = json.dumps({"workload": resnet50.name, "max_gpus": 1}).replace("}", ', "min_throughput": Infinity}')
    response = client_for(alice).generic("POST", "/api/jobs/", raw, content_type="application/json")
    assert response.status_code == 400
    assert not Job.objects.exists()


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=2048)
def test_oversized_body_gets_400(submit, alice):
    response = submit(alice, command="x" * 4000)
    assert response.status_code == 400
    assert "exceeds the limit" in response.json()["detail"]
    assert not Job.objects.exists()


def test_wrong_content_type_gets_415(client_for, alice, cluster):
    response = client_for(alice).post("/api/jobs/", "workload=x", content_type="application/x-www-form-urlencoded")
    assert response.status_code == 415
    assert not Job.objects.exists()


def test_idempotency_key_returns_the_same_job(submit, alice):
    first = submit(alice, headers={"Idempotency-Key": "retry-1"})
    second = submit(alice, headers={"Idempotency-Key": "retry-1"})
    assert first.status_code == second.status_code == 201
    assert first.json()["id"] == second.json()["id"]
    assert second.headers["Idempotent-Replayed"] == "true"
    assert Job.objects.count() == 1
    other = submit(alice, headers={"Idempotency-Key": "retry-2"})
    assert other.json()["id"] != first.json()["id"]


def test_idempotency_key_with_another_body_is_refused(submit, alice):
    submit(alice, headers={"Idempotency-Key": "k"})
    response = submit(alice, min_throughput=99, headers={"Idempotency-Key": "k"})
    assert response.status_code == 400
    assert "already used" in response.json()["idempotency_key"][0]


def test_keys_are_per_user(submit, alice, bob):
    a = submit(alice, headers={"Idempotency-Key": "same"})
    b = submit(bob, headers={"Idempotency-Key": "same"})
    assert a.json()["id"] != b.json()["id"]


def test_tenants_see_only_their_jobs_and_staff_see_all(submit, alice, bob, staff, client_for):
    mine = submit(alice).json()["id"]
    theirs = submit(bob).json()["id"]
    assert [j["id"] for j in client_for(alice).get("/api/jobs/").json()["results"]] == [mine]
    assert client_for(alice).get(f"/api/jobs/{theirs}/").status_code == 404
    assert client_for(alice).post(f"/api/jobs/{theirs}/cancel/").status_code == 404
    assert Job.objects.get(pk=theirs).state == "pending"
    assert {j["id"] for j in client_for(staff).get("/api/jobs/").json()["results"]} == {mine, theirs}


def test_a_jobs_open_allocations_list_the_ids_of_all_the_jobs_sharing_its_gpu(submit, alice, cluster, client_for,
                                                                              django_assert_max_num_queries):
    """A group of three on one GPU; the list reads the partners for every row in one query."""
    from scheduler.models import Allocation

    jobs = [Job.objects.get(pk=submit(alice).json()["id"]) for _ in range(3)]
    for job in jobs:
        Allocation.objects.create(job=job, gpu=cluster[0], start=timezone.now()).partners.set(set(jobs) - {job})
    with django_assert_max_num_queries(8):
        results = {j["id"]: j for j in client_for(alice).get("/api/jobs/").json()["results"]}
    [allocation] = results[jobs[1].pk]["allocations"]
    assert allocation["partners"] == [jobs[0].pk, jobs[2].pk] and allocation["gpu"] == "GPU-v0"
    assert allocation["power_limit_w"] is None and allocation["power_limit_speed"] is None


def test_an_allocation_at_a_power_limit_shows_the_limit_and_the_speed_planned_under_it(submit, alice, cluster,
                                                                                     client_for):
    from scheduler.models import Allocation

    job = Job.objects.get(pk=submit(alice).json()["id"])
    Allocation.objects.create(job=job, gpu=cluster[0], start=timezone.now(), power_limit_w=210.0,
                              power_limit_speed=0.9)
    [allocation] = client_for(alice).get(f"/api/jobs/{job.pk}/").json()["allocations"]
    assert allocation["power_limit_w"] == 210.0 and allocation["power_limit_speed"] == 0.9


def test_teammates_share_their_tenant_jobs(submit, make_user, alice, client_for):
    carol = make_user("carol", tenant="research")
    job = submit(alice).json()["id"]
    assert client_for(carol).get(f"/api/jobs/{job}/").status_code == 200


def test_cancel_then_cancel_again_conflicts(submit, alice, client_for):
    job = submit(alice).json()["id"]
    client = client_for(alice)
    response = client.post(f"/api/jobs/{job}/cancel/")
    assert response.status_code == 200 and response.json()["state"] == "cancelled"
    assert response.json()["finished_at"]
    again = client.post(f"/api/jobs/{job}/cancel/")
    assert again.status_code == 409
    assert "cancelled job cannot become cancelled" in again.json()["detail"]


def test_cancel_keeps_the_reason_given_and_refuses_other_fields(submit, alice, client_for):
    """The body was ignored: a typo such as {"reson": ...} cancelled silently without it."""
    client = client_for(alice)
    job = submit(alice).json()["id"]
    typo = client.post(f"/api/jobs/{job}/cancel/", {"reson": "wrong data"}, format="json")
    assert typo.status_code == 400 and typo.json() == {"reson": ["Unknown field."]}
    assert Job.objects.get(pk=job).state == "pending"
    response = client.post(f"/api/jobs/{job}/cancel/", {"reason": "wrong data set"}, format="json")
    assert response.status_code == 200
    assert Job.objects.get(pk=job).state_reason == "Cancelled by alice. wrong data set"


def test_list_filters_and_pagination(submit, alice, client_for, lm):
    for priority in range(5):
        submit(alice, priority=priority)
    submit(alice, workload=lm.name)
    client = client_for(alice)
    by_workload = client.get("/api/jobs/", {"workload": lm.name}).json()
    assert by_workload["count"] == 1
    urgent = client.get("/api/jobs/", {"priority_min": 3}).json()
    assert urgent["count"] == 2
    page = client.get("/api/jobs/", {"page_size": 4, "ordering": "priority"}).json()
    assert page["count"] == 6 and len(page["results"]) == 4 and page["next"]
    assert [j["priority"] for j in page["results"]] == sorted(j["priority"] for j in page["results"])
    window = client.get("/api/jobs/", {"submitted_after": (timezone.now() + timedelta(minutes=1)).isoformat()})
    assert window.json()["count"] == 0
    assert client.get("/api/jobs/", {"state": "nonsense"}).status_code == 400
    # a fraction was compared truncated (0.5 listed priority 0); times near year 1 or 9999 overflowed (500)
    for bad in ({"priority_min": 0.5}, {"submitted_after": "0001-01-01T00:00:00+05:00"},
                {"submitted_before": "9999-12-31T23:59:59-05:00"}, {"submitted_after": "2024-01-01T00:00:00"}):
        assert client.get("/api/jobs/", bad).status_code == 400, bad


def test_schema_and_docs_are_served(client_for, alice):
    schema = client_for(alice).get("/api/schema/")
    assert schema.status_code == 200
    assert b"/api/jobs/" in schema.content
    assert client_for(alice).get("/api/docs/").status_code == 200
