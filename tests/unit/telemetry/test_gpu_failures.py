"""A GPU its agent reports dead is marked failed, its jobs go back to pending exactly once, and
the simulated backend fails GPUs when told to."""
import argparse

import pytest

from scheduler.models import Allocation, Job
from scheduler.services import job_transition
from telemetry.agent import cli
from telemetry.agent.simulated import SimulatedBackend, SimulatedType, parse_failures
from telemetry.models import Gpu
from telemetry.services import gpus_report_failed

from .jobs import placed_job

V100 = SimulatedType(name="v100", memory_gb=16, power_curve=((0.0, 40.0), (1.0, 300.0)))


@pytest.fixture
def url(node1):
    return f"/api/nodes/{node1.pk}/gpu-failures/"


def test_report_marks_the_gpu_failed_and_requeues_its_jobs_once(gpus, node1, agent, alice, resnet50):
    on_it = job_transition(job=placed_job(alice, resnet50, gpus[:2]), to="running")  # spans GPUs 0 and 1
    elsewhere = placed_job(alice, resnet50, gpus[2:3])
    gpus_report_failed(node=node1, agent_user=agent, failures=[{"uuid": gpus[1].uuid, "reason": "GPU is lost"}])
    failed = Gpu.objects.get(pk=gpus[1].pk)
    assert failed.state == "failed" and failed.state_reason == "agent: GPU is lost"
    job = Job.objects.get(pk=on_it.pk)
    assert job.state == "pending" and job.pending_reason == "GPU failure: node1 GPU 1 failed"
    assert not Allocation.objects.filter(job=on_it, end__isnull=True).exists()  # GPU 0's half closed too
    assert Job.objects.get(pk=elsewhere.pk).state == "placed"
    updated = job.updated_at
    gpus_report_failed(node=node1, agent_user=agent, failures=[{"uuid": gpus[1].uuid, "reason": "again"}])
    assert Job.objects.get(pk=on_it.pk).updated_at == updated
    assert Gpu.objects.get(pk=gpus[1].pk).state_reason == "agent: GPU is lost"


def test_api_reports_and_answers_the_nodes_gpus(client_for, agent, gpus, url):
    response = client_for(agent).post(url, {"gpus": [{"uuid": gpus[3].uuid, "reason": "Xid 79"}]}, format="json")
    assert response.status_code == 200
    assert [(g["index"], g["state"]) for g in response.json()] == [(0, "healthy"), (1, "healthy"), (2, "healthy"),
                                                                   (3, "failed")]


@pytest.mark.parametrize("body, field", [
    ({"gpus": []}, "gpus"),
    ({"gpus": [{"reason": "x"}]}, "gpus"),
    ({"gpus": [{"uuid": "GPU-x", "colour": "red"}]}, "gpus"),
    ({}, "gpus"),
    ({"gpus": [{"uuid": "GPU-not-on-this-node"}]}, "gpus"),
])
def test_bad_reports_are_400_and_change_nothing(client_for, agent, gpus, url, body, field):
    response = client_for(agent).post(url, body, format="json")
    assert response.status_code == 400 and field in response.json()
    assert set(Gpu.objects.values_list("state", flat=True)) == {"healthy"}


def test_only_the_nodes_agent_may_report(client_for, make_user, alice, gpus, url):
    other = make_user("agent-node9", agent=True)
    body = {"gpus": [{"uuid": gpus[0].uuid}]}
    assert client_for(other).post(url, body, format="json").status_code == 403
    assert client_for(alice).post(url, body, format="json").status_code == 403
    assert Gpu.objects.get(pk=gpus[0].pk).state == "healthy"


def test_simulated_gpus_fail_when_told_to():
    now = [100.0]
    backend = SimulatedBackend(hostname="sim-1", layout=[("v100", 3)], types={"v100": V100},
                               fail_after={1: 30.0}, clock=lambda: now[0])
    backend.open()
    assert backend.failures() == {} and len(backend.sample(0)) == 3
    now[0] += 30
    assert backend.failures() == {1: "simulated failure 30 s after start"}
    assert [s.uuid for s in backend.sample(0)] == [backend.devices()[0].uuid, backend.devices()[2].uuid]


def test_fail_gpu_option():
    assert parse_failures(["2@30", "0@0.5"]) == {2: 30.0, 0: 0.5}
    for bad in ("2", "x@3", "1@-2", "1@soon"):
        with pytest.raises(ValueError, match="INDEX@SECONDS"):
            parse_failures([bad])
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    args = parser.parse_args(["--url", "http://127.0.0.1:1", "--token", "t", "--fail-gpu", "1@5"])
    assert cli.run(args) == cli.EXIT_USAGE
