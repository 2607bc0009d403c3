import pytest
from django.utils import timezone

from catalog.models import Measurement
from telemetry.models import Gpu, Node


@pytest.fixture
def cluster(v100, k80):
    """Two approved nodes, 4 V100 + 2 K80 = 6 GPUs."""
    big = Node.objects.create(hostname="v100-a", approved_at=timezone.now())
    small = Node.objects.create(hostname="k80-a", approved_at=timezone.now())
    gpus = [Gpu.objects.create(node=big, index=i, uuid=f"GPU-v{i}", gpu_type=v100) for i in range(4)]
    gpus += [Gpu.objects.create(node=small, index=i, uuid=f"GPU-k{i}", gpu_type=k80) for i in range(2)]
    return gpus


@pytest.fixture
def measured(cluster, resnet50, v100, k80):
    """The cluster, with ResNet-50 measured at 10 steps/s on a V100 (300 W) and 4 on a K80."""
    for gpu_type, tau in ((v100, 10.0), (k80, 4.0)):
        Measurement.objects.create(workload=resnet50, gpu_type=gpu_type, num_gpus=1, throughput=tau,
                                   source="reference", observed_at=timezone.now())
    return cluster


@pytest.fixture
def submit(client_for, resnet50, cluster):
    """submit(user, **fields) -> response of POST /api/jobs/."""

    def post(user, headers=None, **fields):
        body = {"workload": resnet50.name, "min_throughput": 10.0, "max_gpus": 2, **fields}
        return client_for(user).post("/api/jobs/", body, format="json", headers=headers or {})

    return post


@pytest.fixture
def root(client, django_user_model):
    """A superuser signed in on `client` (the admin's tests)."""
    user = django_user_model.objects.create_superuser("root", password="pw-root")
    client.force_login(user)
    return user
