"""The Cluster page's boards table (each GPU's learnt speed, slow flag, health notes and power
limit) and its measured-vs-datasheet power-curve chart data (docs/gpu_health.md)."""
import json
import re

import pytest
from django.test import Client
from django.utils import timezone

from gogh_web.dashboard import selectors
from telemetry.models import Gpu, GpuPowerCurve


@pytest.fixture
def page(alice):
    def get():
        client = Client()
        client.force_login(alice)
        return client.get("/dashboard/").content.decode()
    return get


def test_a_new_cluster_shows_boards_not_learnt_and_no_curve(cluster, page):
    body = page()
    assert body.count("<small>not learnt yet</small>") == len(cluster) == Gpu.objects.count()
    assert 'id="curve-none"' in body and 'id="curve-plot"' not in body
    assert ">default</td>" in body


def test_a_slow_hot_board_with_a_curve_and_a_limit(cluster, page):
    gpu = cluster[0]
    Gpu.objects.filter(pk=gpu.pk).update(
        speed_factor=0.874, speed_observations=14, speed_flag="runs at 87% of its type's predicted speed",
        power_limit_w=225.0, health={"notes": ["hot: 91 C (noted from 85 C)"]},
    )
    GpuPowerCurve.objects.create(gpu=gpu, points=[[0.05, 52.0], [0.95, 281.0]], residual_std_w=7.5, samples=900,
                                 fitted_at=timezone.now())
    body = page()
    row = re.search(rf'<tr data-gpu="{gpu.pk}">(.*?)</tr>', body).group(1)
    assert "0.87 <small>(14 measurements)</small>" in row
    assert '<span class="badge state-slow" title="runs at 87% of its type&#x27;s predicted speed">slow</span>' in row
    assert '<small class="note">hot: 91 C (noted from 85 C)</small>' in row and "225 W" in row
    data = json.loads(re.search(r'<script id="cluster-data" type="application/json">(.*?)</script>', body).group(1))
    assert data["power_curves"] == [{
        "gpu_id": gpu.pk, "label": "gpu-a/0", "gpu_type": "v100", "points": [[0.05, 52.0], [0.95, 281.0]],
        "residual_std_w": 7.5, "samples": 900, "power_limit_w": None, "datasheet": [[0, 35], [1, 300]],
    }]
    assert 'id="curve-plot"' in body
    assert data["gpus"] == selectors.cluster_overview()["gpus"]  # the live dicts the script starts from


def test_an_at_risk_and_throttled_board_says_so_with_its_reason(cluster, page):
    gpu, other = cluster[0], cluster[1]
    Gpu.objects.filter(pk=gpu.pk).update(health={"at_risk": "remapped rows rose from 2 to 9", "throttled_speed": 0.6,
                                                 "notes": ["remapped rows rose from 2 to 9"]})
    body = page()
    row = re.search(rf'<tr data-gpu="{gpu.pk}">(.*?)</tr>', body).group(1)
    assert '<span class="badge state-slow" title="remapped rows rose from 2 to 9">at risk</span>' in row
    assert '<span class="badge state-slow" title="planned at 0.60">throttled</span>' in row
    quiet = re.search(rf'<tr data-gpu="{other.pk}">(.*?)</tr>', body).group(1)
    assert "at risk" not in quiet and "throttled" not in quiet
    gpus = {g["id"]: g for g in selectors.cluster_overview()["gpus"]}  # the live dicts, as the events carry them
    assert (gpus[gpu.pk]["at_risk"], gpus[gpu.pk]["throttled_speed"]) == ("remapped rows rose from 2 to 9", 0.6)
    assert (gpus[other.pk]["at_risk"], gpus[other.pk]["throttled_speed"]) == ("", None)
