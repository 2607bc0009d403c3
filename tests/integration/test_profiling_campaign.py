"""A profiling campaign with real processes: a node agent (simulated GPU of a type the catalog
has no measurement of, jobs' own commands run) registers; the control plane (daphne, a Celery
worker, beat) starts a campaign and submits its jobs; rounds place them on that GPU; the agent
runs the real suite (`python -m catalog.profiling ... --tiny --device cpu`) and forwards its
GOGH_MEASUREMENT lines; the campaign ends done, its cases are `profiling` measurements of that
type, and the type is marked profiled.

The catalog holds the predictor tests' slice (11 workloads of the reference data on K80, P100,
V100) and a P1 trained on it, which estimates the new type from its datasheet, as a real
cluster's would before the suite: the suite's cases whose workloads the slice lacks are
recorded as failed at once ("not in the catalog"), which keeps this test to the 7 it has."""
import json
import sys

import pytest
from django.utils import timezone
from rest_framework.authtoken.models import Token

from catalog.models import GpuType, Measurement
from catalog.services.predictors import predictor_train
from scheduler.models import Job, ProfilingCampaign
from tests.unit.catalog.predictors.conftest import TINY
from tests.unit.catalog.predictors.db_slice import load_slice

from .keep_work import NodeSpec, start_control_plane, tails, wait_for
from .test_http_api import call

pytestmark = pytest.mark.django_db(transaction=True)

NODE = NodeSpec("t4-node", "t4:1", ("--run-commands",))


def test_a_node_of_an_unmeasured_type_gets_its_type_profiled_by_the_suite(spawn, agent, staff, settings):
    settings.VAR_DIR = spawn.var  # the worker reads P1's weights from the var folder they share
    load_slice()
    predictor_train(architecture="feedforward", hyperparameters=TINY)
    t4 = GpuType.objects.create(name="t4", memory_gb=16, tdp_w=70, idle_w=20, power_curve=[[0, 20], [1, 70]])
    spawn.env.update(GOGH_PROFILING_PYTHON=sys.executable, GOGH_PROFILING_SUITE_ARGS="--tiny --device cpu")
    cluster = start_control_plane(spawn, hostnames=[NODE.hostname], speedup=1,
                                  agent_token=Token.objects.create(user=agent).key)
    cluster.start_agent(NODE)
    cluster.wait_ready([NODE.hostname])

    wait_for(lambda: ProfilingCampaign.objects.exists(), "a campaign for t4", cluster.logs, timeout=30)
    campaign = ProfilingCampaign.objects.get()
    assert (campaign.gpu_type, campaign.trigger, campaign.driver_version) == (t4, "new_type", "simulated")
    runnable = set(campaign.cases) - {f["case"] for f in campaign.failures}
    assert len(runnable) == 7 and len(campaign.cases) == 26  # 21 alone and 5 pairs for a 1-GPU node

    def finished() -> bool:
        return ProfilingCampaign.objects.get().state in ("done", "failed")

    wait_for(finished, "the campaign's end", every_log(cluster), timeout=400)
    campaign = ProfilingCampaign.objects.get()
    assert campaign.state == "done", (campaign.failures, tails(every_log(cluster)))
    assert sorted(campaign.cases_done) == sorted(runnable), campaign.failures
    # its last case's line can settle the campaign before its job's final report comes
    wait_for(lambda: not Job.objects.filter(campaign=campaign).exclude(state="succeeded").exists(),
             "its jobs' success", every_log(cluster), timeout=60)
    rows = Measurement.objects.filter(source="profiling", gpu_type=t4)
    assert sorted(rows.values_list("reference", flat=True)) == sorted(f"gogh-suite/1/{case}" for case in runnable)
    assert all(row.throughput > 0 for row in rows)
    pair = rows.get(partner__isnull=False)
    assert (pair.workload.name, pair.partner.name) == ("ResNet-50 (batch size 64)", "LM (batch size 20)")
    assert not Measurement.objects.filter(source="telemetry").exists()  # cases per second are no telemetry
    t4.refresh_from_db()
    assert t4.profiled_at is not None and t4.profiled_at <= timezone.now()
    assert (t4.profiled_suite_version, t4.profiled_driver_version) == ("1", "simulated")
    status, body = call(cluster.base, f"/api/profiling-campaigns/{campaign.pk}/",
                        Token.objects.get_or_create(user=staff)[0].key)
    assert status == 200 and json.loads(body)["state"] == "done"


def every_log(cluster) -> list:
    """The processes' logs and the jobs' output (the suite's lines are in job-<id>.out)."""
    return cluster.logs + sorted(cluster.spawn.folder.glob("jobs/*/*.out")) + sorted(
        cluster.spawn.folder.glob("jobs/*/*.err"))
