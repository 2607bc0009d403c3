"""A Slurm-managed node and placed jobs, and a fake executor behind the real interface (the
Slurm CLI is the true edge; the sync, telemetry's inventory and the job rules run for real)."""
from dataclasses import replace

import pytest
from django.utils import timezone

from scheduler.executors.base import PENDING, Executor, ExecutorError, Launch, NodeStatus, RunStatus, Snapshot
from scheduler.models import Allocation
from scheduler.services import job_submit, job_transition
from telemetry.models import Gpu, Node, NodeManager


class FakeSlurm(Executor):
    """Slurm as the sync sees it: a snapshot of nodes and runs, submits and signals recorded.
    `refuse`: job ids whose submit fails; `broken`: the snapshot fails with this error."""

    name = "slurm"

    def __init__(self, nodes):
        self.nodes = nodes
        self.runs: dict[str, RunStatus] = {}
        self.launches: list[Launch] = []
        self.signals: list[tuple[str, bool]] = []
        self.refuse: set[int] = set()
        self.broken: ExecutorError | None = None
        self.waited_on: list[str] = []

    def snapshot(self, *, waiting_on=()) -> Snapshot:
        self.waited_on = sorted(waiting_on)
        if self.broken:
            raise self.broken
        return Snapshot(nodes=list(self.nodes), runs=list(self.runs.values()))

    def submit(self, launch: Launch) -> str:
        if launch.job_id in self.refuse:
            raise ExecutorError("sbatch --parsable", "Invalid account or account/partition combination")
        external_id = str(1000 + len(self.launches))
        self.launches.append(launch)
        self.runs[external_id] = RunStatus(external_id=external_id, job_id=launch.job_id, state=PENDING,
                                           node=launch.node, native_state="PENDING")
        return external_id

    def signal(self, external_id: str, *, kill: bool) -> None:
        self.signals.append((external_id, kill))

    def set(self, external_id: str, **changes) -> None:
        self.runs[external_id] = replace(self.runs[external_id], **changes)


@pytest.fixture
def slurm_settings(settings, tmp_path):
    settings.GOGH_EXECUTOR = "slurm"
    settings.GOGH_SLURM = {
        "gres_types": {}, "accounts": {"research": "acct-research"}, "partition": "gpu", "sync_s": 2.0,
        "command_timeout_s": 15, "pending_timeout_s": 300, "output_dir": tmp_path / "out",
        "checkpoint_dir": tmp_path / "ckpt",
        "job_prefix": "gogh", "bin_dir": "",
    }
    return settings.GOGH_SLURM


@pytest.fixture
def node(db, v100, slurm_settings):
    """n-v100: four V100s, Slurm's, approved."""
    host = Node.objects.create(hostname="n-v100", approved_at=timezone.now(), managed_by=NodeManager.SLURM)
    for index in range(4):
        Gpu.objects.create(node=host, index=index, uuid=f"slurm:n-v100:{index}", gpu_type=v100)
    return host


@pytest.fixture
def slurm(node):
    return FakeSlurm([NodeStatus(name="n-v100", up=True, gpus={"v100": 4}, shards_per_gpu=2)])


@pytest.fixture
def place(node, alice, resnet50):
    """place(indexes, partners=(), **job fields) -> a job placed on those GPUs of n-v100."""

    def make(indexes=(0,), partners=(), **fields):
        fields = {"command": "python train.py", "environment": {"EPOCHS": "3"}, "total_steps": 1000, **fields}
        job = job_submit(owner=alice, workload=resnet50, min_throughput=1.0, max_gpus=len(indexes), **fields).job
        job = job_transition(job=job, to="placed")
        for index in indexes:
            allocation = Allocation.objects.create(job=job, gpu=Gpu.objects.get(node=node, index=index),
                                                   start=timezone.now())
            allocation.partners.set(partners)
        return job

    return make
