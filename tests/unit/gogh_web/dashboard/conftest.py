"""A two-GPU cluster with a measured workload: enough for a solver to place a job."""
import pytest
from django.test import Client
from django.utils import timezone

from catalog.models import Measurement
from scheduler.services import job_submit
from telemetry.models import Gpu, Node


@pytest.fixture
def cluster(v100, resnet50):
    node = Node.objects.create(hostname="gpu-a", approved_at=timezone.now())
    gpus = [Gpu.objects.create(node=node, index=i, uuid=f"GPU-a{i}", gpu_type=v100) for i in range(2)]
    now = timezone.now()
    for k, throughput in ((1, 4.0), (2, 7.5)):
        Measurement.objects.create(workload=resnet50, gpu_type=v100, num_gpus=k, throughput=throughput, power_w=250,
                                   utilization=0.9, source="reference", observed_at=now)
    return gpus


@pytest.fixture
def submit(resnet50, django_capture_on_commit_callbacks):
    """submit(user, **fields) -> Job, pending, as the API would create it (no round sent)."""

    def make(user, **fields):
        return job_submit(owner=user, workload=resnet50, **{"min_throughput": 2.0, "max_gpus": 2, **fields}).job

    return make


@pytest.fixture
def browser_for():
    """browser_for(user) -> a Django test client signed in as the user (session auth)."""

    def make(user, csrf_checks=False):
        client = Client(enforce_csrf_checks=csrf_checks)
        client.force_login(user)
        return client

    return make
