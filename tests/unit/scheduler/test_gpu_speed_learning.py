"""Each GPU's speed learnt from its jobs' measurements against the other boards' in the same cell
(scheduler.gpu_speed_learning, telemetry.services.gpu_speeds_write; docs/gpu_health.md)."""
from datetime import timedelta

import pytest
from django.utils import timezone

from catalog.models import Measurement
from scheduler import services, tasks
from scheduler.gpu_speed_learning import gpu_speeds_refresh, speed_observations
from scheduler.models import Allocation, JobMeasurement
from telemetry.gpu_speed import Cell
from telemetry.models import Gpu

T0 = timezone.now() - timedelta(days=1)


@pytest.fixture
def jobs(cluster, alice, resnet50):
    """One job on each V100, its round having predicted 10 steps/s."""
    out = []
    for gpu in cluster[:4]:
        job = services.job_submit(owner=alice, workload=resnet50, min_throughput=5, max_gpus=1).job
        Allocation.objects.create(job=job, gpu=gpu, start=T0, predicted_throughput=10.0)
        out.append(job)
    return out


def measure(job, throughput, minute, gpu_type, num_gpus=1):
    m = Measurement.objects.create(workload=job.workload, gpu_type=gpu_type, throughput=throughput, source="telemetry",
                                   num_gpus=num_gpus, observed_at=T0 + timedelta(minutes=minute))
    JobMeasurement.objects.create(job=job, measurement=m)


def rounds(jobs, v100, start, count, slow_factor=1.0):
    """`count` rounds of measurements, each job measured once: the first job's board at `slow_factor`."""
    for r in range(start, start + count):
        for i, job in enumerate(jobs):
            wobble = 1 + 0.01 * ((r + i) % 3 - 1)  # +-1 %: boards of one type differ a little
            measure(job, 10.0 * wobble * (slow_factor if i == 0 else 1.0), r * 10 + i, v100)


def test_a_gpu_that_slowed_ten_percent_is_flagged(jobs, cluster, v100):
    rounds(jobs, v100, 0, 10)
    assert gpu_speeds_refresh() == 4
    assert not Gpu.objects.exclude(speed_flag="").exists()
    assert Gpu.objects.get(pk=cluster[0].pk).speed_factor == pytest.approx(1.0, abs=0.02)

    rounds(jobs, v100, 10, 20, slow_factor=0.9)
    gpu_speeds_refresh()
    slow = Gpu.objects.get(pk=cluster[0].pk)
    assert slow.speed_flag and slow.speed_flagged_at is not None
    assert slow.speed_factor == pytest.approx(0.91, abs=0.03)
    # 30 measurements; the very first of the workload on the type set its baseline and taught nothing.
    assert slow.speed_observations == 29 and slow.speed_factor_std > 0
    others = Gpu.objects.filter(pk__in=[g.pk for g in cluster[1:4]])
    assert all(g.speed_flag == "" and g.speed_factor > 0.97 for g in others)

    newest = speed_observations(limit=4)  # the window: the newest measurements only, oldest first
    assert [m for *_, m in newest] == [m for *_, m in speed_observations()[-4:]] and len(newest) == 4

    flagged_at = slow.speed_flagged_at
    assert gpu_speeds_refresh() == 0  # nothing new: nothing rewritten, the flag keeps its instant
    assert Gpu.objects.get(pk=cluster[0].pk).speed_flagged_at == flagged_at


def test_a_flag_clears_when_the_board_recovers(jobs, cluster, v100):
    rounds(jobs, v100, 0, 10)
    rounds(jobs, v100, 10, 20, slow_factor=0.9)
    gpu_speeds_refresh()
    rounds(jobs, v100, 30, 40)
    gpu_speeds_refresh()
    back = Gpu.objects.get(pk=cluster[0].pk)
    assert back.speed_flag == "" and back.speed_flagged_at is None


def test_a_multi_gpu_job_counts_for_each_of_its_gpus(cluster, alice, resnet50, v100):
    job = services.job_submit(owner=alice, workload=resnet50, min_throughput=5, max_gpus=2).job
    for gpu in cluster[:2]:
        Allocation.objects.create(job=job, gpu=gpu, start=T0, predicted_throughput=18.0)
    measure(job, 17.0, 5, v100, num_gpus=2)
    assert speed_observations() == [(tuple(str(g.pk) for g in cluster[:2]), Cell(resnet50.name, "v100", 2), 17.0)]


def test_the_cell_holds_the_power_limit_the_round_set(cluster, alice, resnet50, v100):
    """Boards are compared only with boards that ran the workload at the same limit."""
    job = services.job_submit(owner=alice, workload=resnet50, min_throughput=5, max_gpus=1).job
    Allocation.objects.create(job=job, gpu=cluster[0], start=T0, predicted_throughput=7.0, power_limit_w=180.0)
    measure(job, 9.0, 5, v100)
    assert speed_observations() == [((str(cluster[0].pk),), Cell(resnet50.name, "v100", limit_w=180.0), 9.0)]


def test_measurements_outside_an_allocation_teach_nothing(cluster, alice, resnet50, v100):
    job = services.job_submit(owner=alice, workload=resnet50, min_throughput=5, max_gpus=1).job
    Allocation.objects.create(job=job, gpu=cluster[0], start=T0 + timedelta(minutes=10),
                              end=T0 + timedelta(minutes=20), predicted_throughput=10.0)
    measure(job, 9.0, 5, v100)  # before its allocation
    measure(job, 9.0, 25, v100)  # after it
    assert speed_observations() == []
    assert gpu_speeds_refresh() == 0
    assert not Gpu.objects.exclude(speed_observations=0).exists()


def test_the_beat_task_refreshes(jobs, v100, settings):
    rounds(jobs, v100, 0, 3)
    assert tasks.gpu_speeds_refresh() == 4
    assert settings.CELERY_BEAT_SCHEDULE["refresh-gpu-speeds"]["task"] == "scheduler.tasks.gpu_speeds_refresh"
