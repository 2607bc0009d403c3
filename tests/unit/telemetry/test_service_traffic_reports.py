"""A service replica's traffic in its agent's job report: recorded with the report's progress in
one transaction; refused (400 naming "traffic", nothing of the report stored) from a job of no
service or out of range, alone and in a batch. A replica's steps per second follow its traffic,
not its GPU's speed: they are no catalog measurement."""
from datetime import timedelta

import pytest
from django.utils import timezone

from catalog.models import Measurement
from scheduler.models import Job, Service, ServiceTraffic
from scheduler.serving.traffic import MAX_RATE_RPS

from .jobs import placed_job

PROGRESS = "/api/telemetry/job-progress/"
BATCH = "/api/telemetry/job-progress/batch/"


@pytest.fixture
def service(alice, resnet50):
    return Service.objects.create(name="ranker", owner=alice, tenant=alice.membership.tenant, workload=resnet50,
                                  latency_bound_ms=50, min_replicas=1, max_replicas=2, batch_size=8)


@pytest.fixture
def replica(service, alice, resnet50, gpus):
    job = placed_job(alice, resnet50, gpus[:1], command="serve")
    Job.objects.filter(pk=job.pk).update(service=service)
    job.refresh_from_db()
    return job


@pytest.fixture
def post(client_for, agent):
    def send(body, url=PROGRESS):
        return client_for(agent).post(url, body, format="json")

    return send


def running(job, steps=40, **fields):
    return {"job": job.pk, "status": "running", "steps": steps, **fields}


def nothing_stored(job, *, state="placed", steps=0):
    job.refresh_from_db()
    assert (job.state, job.steps_done, job.current_step) == (state, steps, steps)
    assert not ServiceTraffic.objects.exists()


def test_a_replicas_traffic_is_stored_with_its_progress_and_refreshes_its_service(post, replica, service):
    response = post(running(replica, traffic={"request_rate_rps": 37.5, "p99_ms": 12.25}))
    assert response.status_code == 200, response.json()
    (sample,) = ServiceTraffic.objects.all()
    assert (sample.service, sample.job, sample.request_rate_rps, sample.p99_ms) == (service, replica, 37.5, 12.25)
    service.refresh_from_db()
    assert (service.request_rate_rps, service.p99_ms) == (37.5, 12.25)
    replica.refresh_from_db()
    assert (replica.state, replica.steps_done) == ("running", 40)


def test_traffic_without_a_p99_and_a_report_without_traffic(post, replica, service):
    assert post(running(replica, traffic={"request_rate_rps": 0})).status_code == 200
    assert post(running(replica, steps=50)).status_code == 200  # nothing new to say: no sample
    assert post(running(replica, steps=60, traffic=None)).status_code == 200
    (sample,) = ServiceTraffic.objects.all()
    assert sample.request_rate_rps == 0 and sample.p99_ms is None
    replica.refresh_from_db()
    assert replica.steps_done == 60


def test_traffic_from_a_job_of_no_service_is_refused_and_nothing_of_the_report_is_stored(post, alice, resnet50,
                                                                                          gpus, service):
    job = placed_job(alice, resnet50, gpus[1:2])
    response = post(running(job, traffic={"request_rate_rps": 10, "p99_ms": 5}))
    assert response.status_code == 400
    assert "not a replica of a service" in response.json()["traffic"][0]
    nothing_stored(job)
    service.refresh_from_db()
    assert service.request_rate_rps == 0


@pytest.mark.parametrize(("traffic", "field"), [
    ({"request_rate_rps": -1}, "request_rate_rps"),
    ({"request_rate_rps": MAX_RATE_RPS * 2}, "request_rate_rps"),
    ({"request_rate_rps": "NaN"}, "request_rate_rps"),
    ({"request_rate_rps": True}, "request_rate_rps"),
    ({}, "request_rate_rps"),
    ({"request_rate_rps": 5, "p99_ms": -0.5}, "p99_ms"),
    ({"request_rate_rps": 5, "p99_ms": 1e9}, "p99_ms"),
    ({"request_rate_rps": 5, "p99_ms": "Infinity"}, "p99_ms"),
    ({"request_rate_rps": 5, "p95_ms": 3}, "p95_ms"),
])
def test_traffic_out_of_range_is_refused_naming_its_field_and_nothing_is_stored(post, replica, traffic, field):
    response = post(running(replica, traffic=traffic))
    assert response.status_code == 400
    assert field in response.json()["traffic"]
    nothing_stored(replica)


def test_traffic_that_is_no_object_is_refused(post, replica):
    response = post(running(replica, traffic=[12, 3]))
    assert response.status_code == 400 and "traffic" in response.json()
    nothing_stored(replica)


def test_in_a_batch_a_refused_traffic_refuses_its_report_alone_naming_the_field(post, replica, alice, resnet50,
                                                                                gpus):
    plain = placed_job(alice, resnet50, gpus[1:2])
    response = post({"reports": [
        running(plain, traffic={"request_rate_rps": 3}),
        running(replica, traffic={"request_rate_rps": 8, "p99_ms": 1e12}),
        running(replica, steps=45, traffic={"request_rate_rps": 8, "p99_ms": 20}),
        running(plain, steps=7),
    ]}, url=BATCH)
    assert response.status_code == 200
    first, second, third, fourth = response.json()["results"]
    assert (first["status"], list(first["errors"])) == (400, ["traffic"])
    assert (second["status"], list(second["errors"])) == (400, ["traffic.p99_ms"])
    assert third["status"] == fourth["status"] == 200
    (sample,) = ServiceTraffic.objects.all()
    assert (sample.job, sample.p99_ms) == (replica, 20)
    plain.refresh_from_db()
    assert plain.steps_done == 7  # the report without traffic went through


def test_a_report_the_rules_refuse_stores_its_traffic_neither(post, replica):
    """Traffic is recorded in the report's transaction: a checkpoint beyond the step refuses both."""
    response = post(running(replica, steps=10, checkpoint_step=20, checkpoint_path="/c/20",
                            traffic={"request_rate_rps": 9}))
    assert response.status_code == 400
    nothing_stored(replica)


def test_a_replicas_steps_per_second_are_no_catalog_measurement(post, replica, alice, resnet50, gpus):
    """Its rate is its traffic's (requests / batch size), not what its GPU can do: the catalog
    would learn that a busy GPU is slow. A training job's report beside it still is one."""
    trainer = placed_job(alice, resnet50, gpus[1:2])
    long_ago = timezone.now() - timedelta(seconds=120)
    Job.objects.filter(pk__in=[replica.pk, trainer.pk]).update(started_at=long_ago)
    assert post(running(replica, steps_per_s=2.0, traffic={"request_rate_rps": 16})).status_code == 200
    assert not Measurement.objects.filter(source="telemetry").exists()
    assert post(running(trainer, steps_per_s=4.2)).status_code == 200
    (measurement,) = Measurement.objects.filter(source="telemetry")
    assert measurement.job_link.job == trainer
