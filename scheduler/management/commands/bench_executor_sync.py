"""bench_executor_sync [--jobs 2000]: one executor sync with that many jobs known to Slurm,
parsed and applied, on a scratch database beside the configured one (bench_round's).

Slurm's answers are built in the shape Slurm 22.05 prints (slurm_recorded.json: one job of
`squeue --json` and one node of `sinfo --json` as this project's cluster printed them, copied
per job and node), with GOGH's database to match: nine in ten jobs GOGH's (most running, some
waiting, some just ended: succeeded, failed, exited to be resumed; a few started since the
last sync), one in ten another user's, each of GOGH's running runs with a line of progress in
its output file. The real SlurmExecutor reads them through a runner that returns that text
(the subprocess edge), and the real sync applies them: the first sync does the work of a busy
interval, the second finds nothing new (the steady state every GOGH_SLURM_SYNC_S). Control-plane
CPU seconds (time.process_time) of each, as a table and as stable keys.
"""
import copy
import json
import subprocess
import tempfile
from datetime import timedelta
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.test import override_settings
from django.utils import timezone

from catalog.models import GpuType, Workload
from gogh_web.cli_args import positive_int
from scheduler.dispatch.executor_sync import executor_sync
from scheduler.executors.slurm.executor import SlurmExecutor
from scheduler.models import Allocation, ExecutorRun, Job, Membership, Tenant
from telemetry.models import Gpu, Node, NodeManager

from .bench_round import scratch_database

RECORDED = Path(__file__).with_name("slurm_recorded.json")
TYPES = ("k80", "p100", "v100")
GPUS_PER_NODE = 4
#: What Slurm says of job i (by i % 20), and the state GOGH's database holds for it.
FOREIGN = (9, 19)
WAITING = (14, 15)
ENDED = {16: ("COMPLETED", 0), 17: ("FAILED", 3 << 8), 18: ("FAILED", 75 << 8)}
NEWLY_STARTED = (0, 1)


class Command(BaseCommand):
    help = "CPU seconds of one executor sync (Slurm's output parsed and applied) with N jobs known to Slurm."

    def add_arguments(self, parser):
        parser.add_argument("--jobs", type=positive_int, default=2000, help="Jobs known to Slurm (GOGH's and others').")

    def handle(self, *args, **options):
        with scratch_database(), tempfile.TemporaryDirectory(prefix="bench-executor-sync-") as scratch:
            scratch = Path(scratch)
            texts = build(options["jobs"], scratch)
            executor = SlurmExecutor(job_prefix="gogh", partition="gpu", runner=RecordedRunner(texts))
            slurm = {"gres_types": {}, "accounts": {}, "partition": "gpu", "sync_s": 2.0, "command_timeout_s": 15,
                     "pending_timeout_s": 300,
                     "output_dir": scratch / "output", "checkpoint_dir": scratch / "checkpoints",
                     "job_prefix": "gogh", "bin_dir": ""}
            with override_settings(GOGH_EXECUTOR="slurm", GOGH_SLURM=slurm):
                first = executor_sync(executor=executor)
                steady = executor_sync(executor=executor)
        report = {"executor_sync.jobs": options["jobs"], "executor_sync.cpu_s_first": round(first.cpu_s, 3),
                  "executor_sync.cpu_s_steady": round(steady.cpu_s, 3)}
        self.stdout.write(f"{'sync':<8} {'CPU s':>7}  what it did")
        for name, sync in (("first", first), ("steady", steady)):
            did = ", ".join(f"{key} {value}" for key, value in sorted(sync.stats.items()) if isinstance(value, int))
            self.stdout.write(f"{name:<8} {sync.cpu_s:>7.3f}  {did}{'' if sync.ok else '; ERROR ' + sync.error}")
        self.stdout.write("")
        for key, value in report.items():
            self.stdout.write(f"{key} {value}")


class RecordedRunner:
    """subprocess.run for the Slurm tools: the prepared text of each command, nothing run."""

    def __init__(self, texts: dict[str, str]):
        self.texts = texts

    def __call__(self, argv, **kwargs) -> subprocess.CompletedProcess:
        return subprocess.CompletedProcess(argv, 0, stdout=self.texts[Path(argv[0]).name], stderr="")


def build(count: int, scratch: Path) -> dict[str, str]:
    """The database's side (nodes, jobs, allocations, runs, output files) and Slurm's
    (`sinfo --json` and `squeue --json` text)."""
    recorded = json.loads(RECORDED.read_text())
    now = timezone.now()
    types = [GpuType.objects.create(name=name, memory_gb=16, tdp_w=250, idle_w=30, power_curve=[[0, 30], [1, 250]])
             for name in TYPES]
    workload = Workload.objects.create(name="bench", family="bench", batch_size=1)
    owner = get_user_model().objects.create_user(username="bench-slurm")
    tenant = Tenant.objects.create(name="bench", slug="bench")
    Membership.objects.create(user=owner, tenant=tenant)
    hosts = [f"n{number:04d}" for number in range(-(-count // GPUS_PER_NODE))]
    nodes = Node.objects.bulk_create(Node(hostname=host, approved_at=now, managed_by=NodeManager.SLURM)
                                     for host in hosts)
    Gpu.objects.bulk_create(Gpu(node=node, index=index, uuid=f"slurm:{node.hostname}:{index}",
                                gpu_type=types[number % len(types)])
                            for number, node in enumerate(nodes) for index in range(GPUS_PER_NODE))
    gpus = {(gpu.node.hostname, gpu.index): gpu for gpu in Gpu.objects.select_related("node")}
    ours = [i for i in range(count) if i % 20 not in FOREIGN]
    placed_at, submitted_at = now - timedelta(minutes=2), now - timedelta(minutes=1)
    jobs = Job.objects.bulk_create(
        Job(owner=owner, tenant=tenant, workload=workload, min_throughput=1.0, max_gpus=1, total_steps=10_000,
            command="python train.py", placed_at=placed_at, started_at=None if _placed(i) else placed_at,
            state="placed" if _placed(i) else "running", state_reason="bench")
        for i in ours
    )
    job_of = dict(zip(ours, jobs, strict=True))
    Allocation.objects.bulk_create(Allocation(job=job_of[i], gpu=gpus[_where(i, hosts)], start=placed_at)
                                   for i in ours)
    (scratch / "output").mkdir()
    runs = []
    for i in ours:
        output = scratch / "output" / f"job-{job_of[i].pk}-run-1.out"
        if i % 20 not in WAITING:
            output.write_text("starting\nGOGH_PROGRESS step=100 total=10000\n")
        runs.append(ExecutorRun(job=job_of[i], executor="slurm", external_id=str(10_000 + i),
                                node=gpus[_where(i, hosts)].node, gpu_type=TYPES[(i // GPUS_PER_NODE) % 3],
                                state="pending" if _placed(i) else "running",
                                native_state="PENDING" if _placed(i) else "RUNNING", gpu_indexes=[] if _placed(i) else
                                [i % GPUS_PER_NODE], output_path=str(output), submitted_at=submitted_at,
                                started_at=None if _placed(i) else submitted_at))
    ExecutorRun.objects.bulk_create(runs)
    squeue = {"meta": recorded["squeue_meta"], "errors": [],
              "jobs": [_job(recorded["job"], i, job_of, hosts, now) for i in range(count)]}
    sinfo = {"meta": recorded["sinfo_meta"], "errors": [], "nodes": [_node(recorded["node"], number, host)
                                                                     for number, host in enumerate(hosts)]}
    return {"squeue": json.dumps(squeue), "sinfo": json.dumps(sinfo), "sacct": ""}


def _placed(i: int) -> bool:
    """GOGH still holds job i as placed: waiting in Slurm, or started since the last sync."""
    return i % 20 in WAITING or i % 20 in NEWLY_STARTED


def _where(i: int, hosts: list[str]) -> tuple[str, int]:
    return hosts[i // GPUS_PER_NODE], i % GPUS_PER_NODE


def _job(template: dict, i: int, job_of: dict, hosts: list[str], now) -> dict:
    job = copy.deepcopy(template)
    host, index = _where(i, hosts)
    gpu_type = TYPES[(i // GPUS_PER_NODE) % 3]
    state, status = ENDED.get(i % 20, ("PENDING" if i % 20 in WAITING else "RUNNING", 0))
    start = int(now.timestamp()) - 60
    job.update(job_id=10_000 + i, name=f"someone-{i}" if i % 20 in FOREIGN else f"gogh-{job_of[i].pk}",
               job_state=state, state_reason="Resources" if state == "PENDING" else
               ("NonZeroExitCode" if status else "None"), exit_code=status, user_name="bench",
               nodes="" if state == "PENDING" else host,
               gres_detail=[] if state == "PENDING" else [f"gpu:{gpu_type}:1(IDX:{index})"],
               start_time=0 if state == "PENDING" else start, end_time=start + 50 if state in ("COMPLETED", "FAILED")
               else start + 3600)
    return job


def _node(template: dict, number: int, host: str) -> dict:
    node = copy.deepcopy(template)
    gpu_type = TYPES[number % 3]
    node.update(name=host, hostname=host, state="mixed", state_flags=[], reason="", partitions=["gpu"],
                gres=f"gpu:{gpu_type}:{GPUS_PER_NODE},shard:{gpu_type}:{2 * GPUS_PER_NODE}")
    return node
