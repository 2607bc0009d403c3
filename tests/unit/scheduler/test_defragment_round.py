"""A round frees a node for an admitted multi-GPU job (optimizer/defragment.py), through the
control plane: two nodes of two V100s, one running ResNet-50 job on each; an LM job whose T_min
(20 steps/s) only two V100s of one node meet (24, against 12 spread over two nodes and 10 on one
GPU) arrives. The aggregated model sees two free V100s and admits it; placement moves the running
job with less work at risk beside the other, recorded as a move, and the LM job takes its node."""
from datetime import timedelta

import pytest
from django.utils import timezone

from catalog.models import Measurement
from scheduler import services
from scheduler.models import Allocation, InterruptionKind, Job, JobInterruption
from telemetry.models import Gpu, Node


@pytest.fixture
def two_nodes(v100, resnet50, lm):
    gpus = {}
    for name in ("a", "b"):
        node = Node.objects.create(hostname=f"v100-{name}", approved_at=timezone.now())
        gpus[name] = [Gpu.objects.create(node=node, index=i, uuid=f"GPU-{name}{i}", gpu_type=v100) for i in range(2)]
    for workload, num_gpus, consolidated, tau in ((resnet50, 1, True, 10.0), (lm, 1, True, 10.0),
                                                  (lm, 2, True, 24.0), (lm, 2, False, 12.0)):
        Measurement.objects.create(workload=workload, gpu_type=v100, num_gpus=num_gpus, consolidated=consolidated,
                                   throughput=tau, source="reference", observed_at=timezone.now())
    return gpus


def running_on(job, gpu, *, steps: int):
    """The job running on `gpu` for two hours, `steps` since its start (never checkpointed)."""
    placed_at = timezone.now() - timedelta(hours=2)
    Allocation.objects.filter(job=job, end__isnull=True).update(gpu=gpu, start=placed_at)
    Job.objects.filter(pk=job.pk).update(state="running", current_step=steps, steps_done=steps, placed_at=placed_at)


def one_on_each_node(two_nodes, alice, resnet50, steps: tuple[int, int]):
    jobs = [services.job_submit(owner=alice, workload=resnet50, min_throughput=8.0, max_gpus=1,
                                total_steps=10_000_000).job for _ in range(2)]
    services.scheduling_round_run(trigger="manual")
    for job, gpu, n in zip(jobs, (two_nodes["a"][0], two_nodes["b"][0]), steps):
        running_on(job, gpu, steps=n)
    return jobs


def held(job) -> list[str]:
    return sorted(Allocation.objects.filter(job=job, end__isnull=True).values_list("gpu__uuid", flat=True))


def test_the_job_with_less_work_at_risk_moves_and_the_lm_job_takes_its_node(two_nodes, alice, resnet50, lm):
    """Job a: 3000 s of work at risk (30,000 steps at 10 steps/s); job b: 50 s. b moves beside a."""
    a, b = one_on_each_node(two_nodes, alice, resnet50, steps=(30_000, 500))
    wide = services.job_submit(owner=alice, workload=lm, min_throughput=20.0, max_gpus=2).job
    services.scheduling_round_run(trigger="submit")
    assert held(a) == ["GPU-a0"] and held(b) == ["GPU-a1"] and held(wide) == ["GPU-b0", "GPU-b1"]
    (move,) = JobInterruption.objects.all()
    assert (move.job_id, move.kind, move.was_running) == (b.pk, InterruptionKind.MOVED, True)


def test_jobs_with_over_a_gpu_day_at_risk_stay_and_the_lm_job_waits_saying_why(two_nodes, alice, resnet50, lm):
    """Both with 30 hours of work (1,080,000 steps): kept (admission_keeps.py), neither moves."""
    a, b = one_on_each_node(two_nodes, alice, resnet50, steps=(1_080_000, 1_080_000))
    wide = services.job_submit(owner=alice, workload=lm, min_throughput=20.0, max_gpus=2).job
    services.scheduling_round_run(trigger="submit")
    assert held(a) == ["GPU-a0"] and held(b) == ["GPU-b0"] and held(wide) == []
    assert not JobInterruption.objects.exists()
    wide.refresh_from_db()
    assert wide.state == "pending" and "no node of type v100 has 2 free GPUs left" in wide.pending_reason
