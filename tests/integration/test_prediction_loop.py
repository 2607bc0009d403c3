"""Predictions in the loop, with real processes: a job of a workload the catalog never measured,
submitted through the API, gets P1's estimates from a Celery worker, is placed by them, runs on
a simulated agent, and the throughput telemetry observes reaches P2, which refines that job's
estimates (catalog.PredictionRecord)."""
import json

import pytest
from django.db.models import Q
from rest_framework.authtoken.models import Token

from catalog.models import Measurement, PredictionRecord
from catalog.services.predictors import predictor_train
from scheduler.models import Job
from telemetry.agent.simjob import reference_throughput, true_factor
from telemetry.models import Gpu
from tests.unit.catalog.predictors.conftest import TINY
from tests.unit.catalog.predictors.db_slice import load_slice

from .conftest import approve_registered_node, simulated_agent_argv, worker_argv
from .test_full_loop import wait_for
from .test_http_api import call, daphne as daphne  # daphne: a fixture, `as` marks it re-exported

pytestmark = pytest.mark.django_db(transaction=True)


def test_p1_on_submit_and_p2_on_telemetry(daphne, spawn, agent, alice, staff, settings, tmp_path):
    settings.VAR_DIR = spawn.var  # the worker reads the weights from the var directory they share
    workloads, _ = load_slice()
    workload = workloads["ResNet-18 (batch size 32)"]  # new to the cluster: nothing measured yet
    Measurement.objects.filter(Q(workload=workload) | Q(partner=workload)).delete()
    version = predictor_train(architecture="feedforward", hyperparameters=TINY)
    _, worker_log = spawn("worker", worker_argv("predict"))
    _, agent_log = spawn("agent", simulated_agent_argv(daphne, "predict-node", tmp_path / "jobs", speedup=5),
                         GOGH_AGENT_TOKEN=Token.objects.create(user=agent).key)
    logs = [worker_log, agent_log]
    wait_for(lambda: Gpu.objects.filter(node__hostname="predict-node").count() == 2, "the agent's registration", logs)
    approve_registered_node(daphne, "predict-node", staff, logs)
    status, body = call(daphne, "/api/jobs/", Token.objects.create(user=alice).key,
                        {"workload": workload.name, "min_throughput": 1, "max_gpus": 1, "total_steps": 3000})
    assert status == 201, body
    job_id = json.loads(body)["id"]

    wait_for(lambda: PredictionRecord.objects.filter(job_id=job_id).exists(), "P1 for the new job", logs)
    first = PredictionRecord.objects.filter(job_id=job_id).earliest("id")
    assert first.version == version and first.observations == [] and first.workload == workload
    wait_for(lambda: Measurement.objects.filter(source="telemetry", workload=workload).exists(),
             "a telemetry measurement", logs)
    wait_for(lambda: PredictionRecord.objects.filter(job_id=job_id).exclude(observations=[]).exists(),
             "P2's refinement", logs)
    refined = PredictionRecord.objects.filter(job_id=job_id).latest("id")
    observed = Measurement.objects.filter(source="telemetry", workload=workload).earliest("id")
    # the simulated GPU's real-time rate, though the job ran 5 times faster to save time
    truth = reference_throughput(workload.name, "v100", 1, None) * true_factor(
        workload.name, 0, 0.15
    )  # simjob's default deviation
    assert observed.throughput == pytest.approx(truth, rel=0.15)
    assert refined.observations[0]["gpu_type"] == "v100"
    assert refined.observations[0]["throughput"] == pytest.approx(observed.throughput)
    v100 = refined.estimates["configs"].index(["v100", 1, True])
    before, after = first.estimates["tau"][v100], refined.estimates["tau"][v100]
    assert abs(after - observed.throughput) < abs(before - observed.throughput)  # moved toward what was seen
    assert Job.objects.get(pk=job_id).state in {"running", "succeeded"}
