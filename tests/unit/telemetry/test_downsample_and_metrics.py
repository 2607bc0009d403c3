"""Raw samples folded into per-minute aggregates by the beat task; /metrics for Prometheus."""
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth.models import Permission
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from catalog.models import Measurement
from scheduler.models import JobMeasurement, SolveRun
from scheduler.services import job_transition
from telemetry import tasks
from telemetry.models import Gpu, GpuPowerCurve, GpuSample, GpuSampleMinute
from telemetry.services import gpu_samples_downsample

from .jobs import placed_job

NOW = datetime(2026, 11, 30, 12, 0, 30, tzinfo=UTC)


@pytest.fixture
def gpu(node1):
    return Gpu.objects.get(node=node1, index=0)


def test_old_samples_become_minutes_recent_ones_stay_raw(gpu):
    start = NOW - timedelta(hours=2)  # 10:00:30
    for second in range(0, 120, 10):  # 10:00:30 .. 10:02:20 every 10 s
        GpuSample.objects.create(gpu=gpu, ts=start + timedelta(seconds=second), power_w=100 + second,
                                 utilization=0.5, temperature_c=50 + second / 10, ecc_corrected=second // 60)
    GpuSample.objects.create(gpu=gpu, ts=start + timedelta(seconds=15), power_w=None)  # a missing reading
    recent = GpuSample.objects.create(gpu=gpu, ts=NOW - timedelta(minutes=5), power_w=80)
    # Retention 2 h - 90 s -> cutoff 10:02:00: the minutes 10:00 and 10:01 are folded, 10:02 is not.
    folded = gpu_samples_downsample(retention_s=2 * 3600 - 90, now=NOW)
    assert folded == 10
    first, second = GpuSampleMinute.objects.order_by("minute")
    assert first.minute == datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
    assert (first.samples, first.power_w_mean, first.power_w_max) == (4, pytest.approx(110), 120)
    assert (second.samples, second.power_w_mean, second.temperature_c_max) == (6, pytest.approx(155), 58)
    assert second.utilization_mean == pytest.approx(0.5) and second.ecc_corrected_max == 1
    assert set(GpuSample.objects.values_list("pk", flat=True)) >= {recent.pk}
    assert GpuSample.objects.count() == 4  # 10:02:00, 10:02:10, 10:02:20 and the recent one

    # A late sample of a folded minute is merged into it.
    GpuSample.objects.create(gpu=gpu, ts=datetime(2026, 11, 30, 10, 0, 59, tzinfo=UTC), power_w=210)
    assert gpu_samples_downsample(retention_s=2 * 3600 - 90, now=NOW) == 1
    first = GpuSampleMinute.objects.order_by("minute").first()
    assert (first.samples, first.power_w_mean, first.power_w_max) == (5, pytest.approx(130), 210)


def test_the_beat_task_uses_the_configured_retention(gpu, settings):
    settings.GOGH_TELEMETRY_RAW_RETENTION_S = 60
    GpuSample.objects.create(gpu=gpu, ts=timezone.now() - timedelta(minutes=10), power_w=1)
    GpuSample.objects.create(gpu=gpu, ts=timezone.now(), power_w=2)
    assert tasks.gpu_samples_downsample() == 1
    assert GpuSampleMinute.objects.get().power_w_mean == 1
    assert "downsample-gpu-samples" in settings.CELERY_BEAT_SCHEDULE


def scrape(client):
    response = client.get("/metrics")
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.content.decode())
        for sample in family.samples
    }


def test_metrics_show_gpus_queue_solver_and_predictions(client_for, staff, node1, gpu, alice, resnet50):
    now = timezone.now()
    GpuSample.objects.create(gpu=gpu, ts=now - timedelta(seconds=30), power_w=100, utilization=0.2)
    GpuSample.objects.create(gpu=gpu, ts=now - timedelta(seconds=2), power_w=250.5, utilization=0.97,
                             temperature_c=70, sm_clock_mhz=1500, memory_used_mb=4096)
    stale = Gpu.objects.get(node=node1, index=1)
    GpuSample.objects.create(gpu=stale, ts=now - timedelta(hours=1), power_w=99)
    gpus = list(Gpu.objects.filter(node=node1).order_by("index"))
    on_time = job_transition(job=placed_job(alice, resnet50, gpus[2:3], predicted=4.0), to="running")
    slow = job_transition(job=placed_job(alice, resnet50, gpus[3:4], predicted=4.0, min_throughput=3.5), to="running")
    for job, observed in ((on_time, 5.0), (slow, 3.0)):
        measurement = Measurement.objects.create(
            workload=resnet50, gpu_type=gpus[0].gpu_type, throughput=observed,
            source="telemetry", reference=f"telemetry: job {job.pk}", observed_at=now,
        )
        JobMeasurement.objects.create(job=job, measurement=measurement)
    placed_job(alice, resnet50, gpus[:1])
    SolveRun.objects.create(trigger="periodic", solver="ilp", status="optimal", duration_s=0.5)
    SolveRun.objects.create(trigger="periodic", solver="ilp", status="optimal", duration_s=1.5)

    metrics = scrape(client_for(staff))
    labels = (("Hostname", "node1"), ("UUID", "GPU-node1-0"), ("device", "nvidia0"), ("gpu", "0"),
              ("gpu_type", "v100"), ("modelName", "v100"))
    assert metrics[("gogh_gpu_power_watts", labels)] == 250.5  # the latest sample
    assert metrics[("gogh_gpu_utilization_ratio", labels)] == 0.97
    assert metrics[("gogh_gpu_temperature_celsius", labels)] == 70
    assert metrics[("gogh_gpu_sm_clock_mhz", labels)] == 1500
    assert not any(key[0] == "gogh_gpu_power_watts" and ("UUID", stale.uuid) in key[1] for key in metrics)
    assert metrics[("gogh_jobs", (("state", "running"),))] == 2
    assert metrics[("gogh_jobs", (("state", "placed"),))] == 1
    assert metrics[("gogh_jobs", (("state", "pending"),))] == 0
    assert metrics[("gogh_nodes", (("state", "ready"),))] == 1
    assert metrics[("gogh_solve_duration_seconds_count", ())] == 2
    assert metrics[("gogh_solve_duration_seconds_sum", ())] == 2.0
    assert metrics[("gogh_prediction_abs_error_ratio", ())] == pytest.approx((0.25 + 0.25) / 2)
    assert metrics[("gogh_jobs_below_min_throughput", ())] == 1


def test_metrics_need_staff_or_the_view_permission(client_for, alice, make_user, node1):
    assert client_for(None).get("/metrics").status_code == 401
    assert client_for(alice).get("/metrics").status_code == 403
    prometheus = make_user("prometheus")
    prometheus.user_permissions.add(Permission.objects.get(codename="view_gpusample"))
    metrics = scrape(client_for(prometheus))
    assert metrics[("gogh_nodes", (("state", "ready"),))] == 1


def test_metrics_errors_are_plain_text_not_a_python_repr(client_for, alice):
    anonymous, user = client_for(None).get("/metrics"), client_for(alice).get("/metrics")
    assert anonymous.status_code == 401
    assert anonymous.content == b"Authentication credentials were not provided.\n"
    assert user.status_code == 403
    assert user.content == b"You do not have permission to perform this action.\n"
    assert user["Content-Type"].startswith("text/plain")


def test_metrics_show_each_boards_speed_flag_limit_and_curve(client_for, staff, node1, gpu):
    Gpu.objects.filter(pk=gpu.pk).update(speed_factor=0.88, speed_flag="runs at 88 %", power_limit_w=250.0,
                                         health={"notes": ["hot: 90 C (noted from 85 C)"], "throttled_speed": 0.6,
                                                 "at_risk": "retired pages rose from 0 to 4"})
    GpuPowerCurve.objects.create(gpu=gpu, points=[[0, 40], [1, 280]], residual_std_w=6.5, samples=900,
                                 fitted_at=timezone.now())
    metrics = scrape(client_for(staff))
    labels = (("Hostname", "node1"), ("UUID", "GPU-node1-0"), ("device", "nvidia0"), ("gpu", "0"),
              ("gpu_type", "v100"), ("modelName", "v100"))
    other = (("Hostname", "node1"), ("UUID", "GPU-node1-1"), ("device", "nvidia1"), ("gpu", "1"),
             ("gpu_type", "v100"), ("modelName", "v100"))
    assert metrics[("gogh_gpu_speed_factor", labels)] == 0.88 and metrics[("gogh_gpu_slow", labels)] == 1
    assert metrics[("gogh_gpu_power_limit_watts", labels)] == 250.0
    assert metrics[("gogh_gpu_power_curve_residual_watts", labels)] == 6.5
    assert metrics[("gogh_gpu_health_notes", labels)] == 1
    assert metrics[("gogh_gpu_at_risk", labels)] == 1 and metrics[("gogh_gpu_at_risk", other)] == 0
    assert metrics[("gogh_gpu_throttled_speed", labels)] == 0.6
    assert ("gogh_gpu_throttled_speed", other) not in metrics  # not throttled: no line
    assert metrics[("gogh_gpu_speed_factor", other)] == 1.0 and metrics[("gogh_gpu_slow", other)] == 0
    assert ("gogh_gpu_power_limit_watts", other) not in metrics  # nothing reported: no line
    assert ("gogh_gpu_power_curve_residual_watts", other) not in metrics
