"""A service replica has no total steps and never ends by itself: its agent's progress reports
keep it running however many steps (batches) it has answered; it ends only when its run does."""
import pytest

from scheduler.models import Job, Service

from .jobs import placed_job

PROGRESS = "/api/telemetry/job-progress/"


@pytest.mark.django_db
def test_a_replica_runs_on_with_no_total_steps(client_for, agent, gpus, alice, resnet50):
    replica = placed_job(alice, resnet50, gpus[0:1])
    service = Service.objects.create(name="ranker", owner=alice, tenant=alice.membership.tenant, workload=resnet50,
                                     latency_bound_ms=500)
    Job.objects.filter(pk=replica.pk).update(service=service)
    for steps in (0, 10**6, 10**9):
        response = client_for(agent).post(PROGRESS, {"job": replica.pk, "status": "running", "steps": steps},
                                          format="json")
        assert response.status_code == 200, response.content
    replica.refresh_from_db()
    assert replica.state == "running" and replica.total_steps is None and replica.steps_done == 10**9
