"""The GPU API and admin show each board's learnt speed, flag, health and fitted power curve
(docs/gpu_health.md), read-only."""
from datetime import UTC, datetime

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from telemetry.models import Gpu, GpuPowerCurve

FITTED = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


@pytest.fixture
def slow_board(gpus):
    gpu = gpus[0]
    Gpu.objects.filter(pk=gpu.pk).update(speed_factor=0.89, speed_factor_std=0.02, speed_observations=15,
                                         speed_flag="runs at 89%", speed_flagged_at=FITTED,
                                         health={"temperature_c": 88, "notes": ["hot: 88 C (noted from 85 C)"]})
    GpuPowerCurve.objects.create(gpu=gpu, points=[[0.1, 60.0], [0.9, 270.0]], residual_std_w=5.5, samples=800,
                                 fitted_at=FITTED)
    return Gpu.objects.get(pk=gpu.pk)


def test_the_gpu_api_shows_speed_flag_health_and_curve(client_for, alice, slow_board, gpus):
    body = client_for(alice).get(f"/api/gpus/{slow_board.pk}/").json()
    assert (body["speed_factor"], body["speed_factor_std"], body["speed_observations"]) == (0.89, 0.02, 15)
    assert body["speed_flag"] == "runs at 89%" and body["speed_flagged_at"].startswith("2026-11-30T12:00")
    assert body["health"]["notes"] == ["hot: 88 C (noted from 85 C)"]
    assert body["power_curve"] == {"points": [[0.1, 60.0], [0.9, 270.0]], "residual_std_w": 5.5, "samples": 800,
                                   "power_limit_w": None, "fitted_at": body["power_curve"]["fitted_at"]}
    other = client_for(alice).get(f"/api/gpus/{gpus[1].pk}/").json()
    assert other["power_curve"] is None and other["speed_factor"] == 1.0 and other["speed_flag"] == ""


def test_the_gpu_api_reads_curves_without_a_query_per_gpu(client_for, alice, slow_board, django_assert_max_num_queries):
    client = client_for(alice)
    with django_assert_max_num_queries(8):
        assert client.get("/api/gpus/").json()["count"] == 4
        assert client.get("/api/nodes/").status_code == 200


def test_the_admin_shows_the_board_read_only(slow_board):
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("root", "root@example.org", "pw"))
    listing = client.get("/admin/telemetry/gpu/").content.decode()
    assert "0.89" in listing
    page = client.get(f"/admin/telemetry/gpu/{slow_board.pk}/change/").content.decode()
    assert "0.10: 60 W, 0.90: 270 W (\u00b15.5 W, 800 samples, fitted 2026-11-30 12:00)" in page
    assert "runs at 89%" in page and 'name="speed_factor"' not in page  # shown, not editable
