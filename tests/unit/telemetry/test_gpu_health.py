"""Each GPU's health signals kept as its latest on ingest, with notes on those that warn
(telemetry/gpu_health.py, docs/gpu_health.md)."""
from datetime import timedelta

from django.utils import timezone

from telemetry.gpu_health import health_of
from telemetry.models import Gpu

from .test_samples_api import URL, sample


def test_steady_readings_give_no_notes():
    health = health_of({"temperature_c": 60, "ecc_corrected": 4, "ecc_uncorrected": 0, "retired_pages": 0,
                        "throttle_reasons": 0x1 | 0x4}, {})
    assert health["notes"] == []
    assert health["throttle_reasons"] == ["idle", "software power cap"]  # shown, not noted: the plan's own cap
    assert health["first"] == {"ecc_uncorrected": 0, "retired_pages": 0}


def test_brakes_heat_and_rising_counts_are_noted():
    before = health_of({"ecc_uncorrected": 1, "remapped_rows": 2}, {})
    after = health_of({"temperature_c": 91, "ecc_uncorrected": 3, "remapped_rows": 2, "throttle_reasons": 0x80},
                      before)
    assert after["notes"] == ["clocks held back: power brake", "hot: 91 C (noted from 85 C)",
                              "ecc uncorrected rose from 1 to 3"]
    assert after["first"] == {"ecc_uncorrected": 1, "remapped_rows": 2}


def test_a_signal_the_board_does_not_report_is_absent():
    assert health_of({"temperature_c": None, "throttle_reasons": None}, {}) == {
        "throttle_reasons": [], "first": {}, "notes": []
    }


def test_an_upload_keeps_the_newest_readings_as_the_gpus_health(client_for, agent, node1):
    now = timezone.now()
    older = {**sample(), "ts": (now - timedelta(seconds=5)).isoformat(), "temperature_c": 99}
    newer = {**sample(), "ts": (now - timedelta(seconds=1)).isoformat(), "throttle_reasons": 0x40,
             "remapped_rows": 0}
    response = client_for(agent).post(URL, {"samples": [newer, older]}, format="json")
    assert response.status_code == 201, response.content
    health = Gpu.objects.get(uuid="GPU-node1-0").health
    assert health["temperature_c"] == 64 and health["remapped_rows"] == 0
    assert health["notes"] == ["clocks held back: hardware thermal slowdown"]
    assert Gpu.objects.get(uuid="GPU-node1-1").health == {}


def test_a_refused_batch_keeps_no_health(client_for, agent, node1):
    bad = sample(throttle_reasons=-1)
    response = client_for(agent).post(URL, {"samples": [bad]}, format="json")
    assert response.status_code == 400 and "samples[0].throttle_reasons" in response.json()
    assert not Gpu.objects.exclude(health={}).exists()
