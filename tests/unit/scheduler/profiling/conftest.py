"""A stand-in for the benchmark suite (scheduler.profiling.suite reads catalog.profiling), so
that these tests fix the cases they reason about; the suite's own list is tested with it."""
import pytest
from django.utils import timezone

from scheduler.models import Allocation, Job
from scheduler.profiling import suite
from scheduler.profiling.suite import SuiteCase
from scheduler.services import job_transition
from telemetry.models import Gpu, Node

R50, LM, MISSING = "ResNet-50 (batch size 64)", "LM (batch size 20)", "Transformer (batch size 64)"
PAIR = f"{R50} + {LM}"
CASES = [
    SuiteCase(R50, R50, 1), SuiteCase(LM, LM, 1), SuiteCase(PAIR, R50, 1, LM), SuiteCase(MISSING, MISSING, 1),
    SuiteCase(f"{LM} x2", LM, 2), SuiteCase(f"{R50} x2", R50, 2),
]


@pytest.fixture
def fake_suite(monkeypatch):
    """Suite version "1" with CASES (the 2-GPU ones only for nodes with 2 GPUs or more)."""
    monkeypatch.setattr(suite, "suite_version", lambda: "1")
    monkeypatch.setattr(suite, "cases_for", lambda count: [case for case in CASES if case.num_gpus <= count])
    return CASES


@pytest.fixture
def catalog(resnet50, lm):
    """The workloads of CASES but MISSING."""
    return resnet50, lm


@pytest.fixture
def v100_node(v100, agent):
    """An approved node of the agent with 2 V100s."""
    node = Node.objects.create(hostname="v100-n", approved_at=timezone.now(), agent=agent)
    for index in range(2):
        Gpu.objects.create(node=node, index=index, uuid=f"GPU-n{index}", gpu_type=v100)
    return node


def place(job: Job, node: Node, count: int | None = None) -> Job:
    """The job placed on the first `count` (default: its max) GPUs of `node`, as a round leaves it."""
    job = job_transition(job=job, to="placed")
    for gpu in Gpu.objects.filter(node=node).order_by("index")[: count or job.max_gpus]:
        Allocation.objects.create(job=job, gpu=gpu, start=timezone.now())
    return job
