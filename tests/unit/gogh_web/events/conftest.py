"""Fixtures of the live-update tests: a measured cluster, committed service calls, and the
client-side rule for applying events (what static/js/live.js does), in Python."""
import copy
import json

import pytest
from django.utils import timezone

from catalog.models import Measurement
from telemetry.models import Gpu, Node


@pytest.fixture
def cluster(v100, k80):
    """Two approved nodes, 4 V100 + 2 K80."""
    big = Node.objects.create(hostname="v100-a", approved_at=timezone.now())
    small = Node.objects.create(hostname="k80-a", approved_at=timezone.now())
    gpus = [Gpu.objects.create(node=big, index=i, uuid=f"GPU-v{i}", gpu_type=v100) for i in range(4)]
    return gpus + [Gpu.objects.create(node=small, index=i, uuid=f"GPU-k{i}", gpu_type=k80) for i in range(2)]


@pytest.fixture
def measured(cluster, resnet50, lm, v100, k80):
    """ResNet-50 runs 10/s on a V100 and 4/s on a K80; LM 30/s and 20/s."""
    for workload, gpu_type, tau in [(resnet50, v100, 10.0), (resnet50, k80, 4.0), (lm, v100, 30.0), (lm, k80, 20.0)]:
        Measurement.objects.create(workload=workload, gpu_type=gpu_type, throughput=tau, source="reference",
                                   observed_at=timezone.now())
    return cluster


@pytest.fixture
def committed(django_capture_on_commit_callbacks, monkeypatch):
    """`with committed(): service(...)`: the service's transaction counts as committed, so its
    on_commit work (events) runs; scheduling-round requests are dropped (the tests run rounds)."""
    from scheduler import services

    monkeypatch.setattr(services, "_send_round", lambda trigger: None)
    monkeypatch.setattr(services, "_send_prediction", lambda job_id: None)
    return lambda: django_capture_on_commit_callbacks(execute=True)


def plain(value):
    """As a browser would hold it: JSON in, JSON out."""
    return json.loads(json.dumps(value))


def apply_events(state: dict, events: list[dict]) -> dict:
    """live.js's rule: state[kind][key] = data on upsert, removed on delete."""
    state = copy.deepcopy(state)
    for event in events:
        objects = state.setdefault(event["kind"], {})
        if event["op"] == "delete":
            objects.pop(event["key"], None)
        else:
            objects[event["key"]] = event["data"]
    return state
