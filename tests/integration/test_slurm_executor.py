"""GOGH driving a real Slurm (issue 17): the local cluster of `.ci/slurm` (slurmctld, one slurmd
per node: n-k80, n-p100, n-v100, 4 emulated GPUs each, 2 shards per GPU), and a control plane of
real processes with GOGH_EXECUTOR=slurm: daphne, one Celery worker on every queue and Celery
beat (the sync every second, a periodic round every 5 s). Nodes come from Slurm's inventory
alone (no agent runs); jobs are submitted through the REST API with a `command` running
tests/integration/jobs/slurm_steps_job.py under the job contract.

What each test checks is read where it happens: Slurm's own view (`squeue --json`), the API
for what users see, each run's output file for what the job did, and the database only for
what the control plane recorded (its runs, interruptions and GPUs' holders).

The GPU types' watts make the power-minimising round prefer v100, then p100, then k80; every
assertion about placement is relative to what the round chose, since other sessions' jobs on
the shared cluster may hold GPUs (GOGH plans around them, as around any foreign job). Every
Slurm job these tests make is named h4e2e-... and cancelled at the end; a drained node is
resumed. Slurm must answer: a missing cluster fails the run, never skips it.
"""
import json
import subprocess
import sys
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from django.utils import timezone
from rest_framework.authtoken.models import Token

from catalog.models import GpuType, Measurement, Workload
from scheduler.models import Allocation, ExecutorRun, Job
from scheduler.services import solver_config_update
from telemetry.models import Gpu, Node
from telemetry.services.executor_inventory import executor_inventory_apply

from .conftest import ROOT, free_port, wait_for_http, worker_argv
from .keep_work import wait_for
from .test_http_api import call

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres_tier]

#: Every Slurm job of these tests is named h4e2e-...: each stack's GOGH_SLURM_JOB_PREFIX is
#: h4e2e-<a new word>, since job ids start again at 1 in each test's database while Slurm still
#: lists the last test's jobs (MinJobAge).
PREFIX = "h4e2e"
FOREIGN = f"{PREFIX}-foreign"  # a job submitted straight to Slurm: not <prefix>-<int>, so not GOGH's
NODES = ("n-k80", "n-p100", "n-v100")
JOB = ROOT / "tests" / "integration" / "jobs" / "slurm_steps_job.py"
WORKLOAD = "Slurm steps"
#: GPU type -> (TDP in W, steps/s alone): the round, minimising power at T_min, prefers v100.
TYPES = {"v100": (100, 6.0), "p100": (200, 4.0), "k80": (300, 2.0)}
SHARED = 0.9  # each job's fraction of its rate alone when two share a GPU (measured, below)
LIVE = {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING"}
ENDED = {"succeeded", "failed", "cancelled"}


# --- Slurm, read and driven with its own commands ---------------------------------------------

def slurm(*argv: str) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, f"{' '.join(argv)}: {done.stderr.strip()}"
    return done.stdout


def slurm_jobs() -> dict[str, list[dict]]:
    """Slurm's jobs by name, each name's in submission order (squeue --json lists the ended ones
    for MinJobAge, 5 min here)."""
    jobs = defaultdict(list)
    for job in sorted(json.loads(slurm("squeue", "--json"))["jobs"], key=lambda job: job["job_id"]):
        jobs[job["name"]].append(job)
    return jobs


def slurm_runs(stack: "Stack", job_id: int) -> list[dict]:
    return slurm_jobs().get(f"{stack.prefix}-{job_id}", [])


def cancel_our_slurm_jobs(timeout: float = 60) -> None:
    """Cancel every live Slurm job of these tests and wait until none is left: one left over
    would hold GPUs (as a foreign job) in the next test."""
    def ours() -> list[str]:
        return [str(job["job_id"]) for name, jobs in slurm_jobs().items() if name.startswith(f"{PREFIX}-")
                for job in jobs if job["job_state"] in LIVE]

    if ids := ours():
        subprocess.run(["scancel", *ids], capture_output=True, timeout=30)
    deadline = time.monotonic() + timeout
    while (left := ours()) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not left, f"Slurm jobs {left} still live {timeout} s after scancel"


@pytest.fixture(scope="module", autouse=True)
def slurm_is_up():
    try:
        listed = subprocess.run(["sinfo", "-h", "-N", "-o", "%N"], capture_output=True, text=True, timeout=15)
    except (OSError, subprocess.TimeoutExpired) as exc:
        pytest.fail(f"Slurm's sinfo did not run ({exc}): start the local cluster with `bash .ci/services`")
    missing = set(NODES) - set(listed.stdout.split())
    if listed.returncode != 0 or missing:
        pytest.fail(f"Slurm does not list {', '.join(sorted(missing))} ({listed.stderr.strip() or 'sinfo'}): "
                    "start the local cluster with `bash .ci/services`")


# --- the control plane ------------------------------------------------------------------------

@dataclass
class Stack:
    base: str
    token: str
    prefix: str
    spawn: object
    env: dict
    logs: list[Path] = field(default_factory=list)

    def start_beat(self) -> None:
        """Celery beat: the sync every GOGH_SLURM_SYNC_S (its first brings Slurm's nodes in)."""
        _, log = self.spawn("beat", [sys.executable, "-m", "celery", "-A", "gogh_web", "beat", "-l", "INFO"],
                            **self.env)
        self.logs.append(log)
        wait_for(lambda: Node.objects.filter(hostname__in=NODES, managed_by="slurm", state="ready").count()
                 == len(NODES), "Slurm's three nodes ready in GOGH", self.logs, 60)

    def running_in_slurm(self, job_id: int) -> dict | None:
        runs = slurm_runs(self, job_id)
        return runs[-1] if runs and runs[-1]["job_state"] == "RUNNING" else None

    def job(self, job_id: int) -> dict:
        status, body = call(self.base, f"/api/jobs/{job_id}/", self.token)
        assert status == 200, body
        return json.loads(body)

    def wait_job(self, job_id: int, predicate, what: str, timeout: float = 90) -> dict:
        seen = {}

        def check() -> bool:
            seen["job"] = self.job(job_id)
            return predicate(seen["job"])

        wait_for(check, f"job {job_id}: {what}", self.every_log(), timeout)
        return seen["job"]

    def every_log(self) -> list[Path]:
        outputs = [Path(path) for path in ExecutorRun.objects.values_list("output_path", flat=True) if path]
        return self.logs + [path for path in outputs if path.exists()]


def seed_catalog() -> None:
    """k80, p100 and v100 (the gres types of the cluster: the identity map), and a workload
    measured on each alone and as a pair with itself."""
    workload = Workload.objects.create(name=WORKLOAD, family="Slurm steps", batch_size=1)
    now = timezone.now()
    for name, (tdp, rate) in TYPES.items():
        gpu_type = GpuType.objects.create(name=name, memory_gb=16, tdp_w=tdp, idle_w=tdp / 5,
                                          power_curve=[[0, tdp / 5], [1, tdp]])
        Measurement.objects.create(workload=workload, gpu_type=gpu_type, throughput=rate, utilization=0.5,
                                   source="reference", observed_at=now)
        Measurement.objects.create(workload=workload, gpu_type=gpu_type, partner=workload, throughput=rate * SHARED,
                                   partner_throughput=rate * SHARED, utilization=0.9, source="reference",
                                   observed_at=now)


@pytest.fixture
def start_stack(spawn, tmp_path, alice):
    """start_stack(theta, beat=True) -> Stack: daphne, one worker on every queue and (with
    `beat`) beat, in slurm mode, their runs' output and checkpoints under tmp_path."""
    cancel_our_slurm_jobs()  # what an interrupted earlier run left would hold GPUs

    def start(theta: int, beat: bool = True) -> Stack:
        seed_catalog()
        solver_config_update(by=None, values={"theta": theta})
        prefix = f"{PREFIX}-{uuid.uuid4().hex[:6]}"
        env = {"GOGH_EXECUTOR": "slurm", "GOGH_SLURM_JOB_PREFIX": prefix, "GOGH_SLURM_SYNC_S": "1",
               "GOGH_SLURM_OUTPUT_DIR": str(tmp_path / "slurm-output"),
               "GOGH_SLURM_CHECKPOINT_DIR": str(tmp_path / "slurm-checkpoints"), "GOGH_SCHEDULING_INTERVAL_S": "5"}
        port = free_port()
        daphne, daphne_log = spawn(
            "daphne", [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "gogh_web.asgi:application"],
            **env)
        _, worker_log = spawn("worker", worker_argv("slurm-e2e"), **env)
        stack = Stack(base=f"http://127.0.0.1:{port}", token=Token.objects.create(user=alice).key, prefix=prefix,
                      spawn=spawn, env=env, logs=[daphne_log, worker_log])
        wait_for_http(stack.base + "/api/", daphne, daphne_log)
        if beat:
            stack.start_beat()
        return stack

    yield start
    cancel_our_slurm_jobs()


def submit(stack: Stack, steps: int, *, sleep: float = 0.1, checkpoint_every: int = 10, fail: str = "") -> int:
    command = f"{sys.executable} {JOB} --steps {steps} --sleep {sleep} --checkpoint-every {checkpoint_every} {fail}"
    status, body = call(stack.base, "/api/jobs/", stack.token, {
        "workload": WORKLOAD, "min_throughput": 1.0, "max_gpus": 1, "total_steps": steps, "command": command.strip(),
        "preemption_grace_s": 20,
    })
    assert status == 201, body
    return json.loads(body)["id"]


def output(run: ExecutorRun) -> list[str]:
    """The run's own output file (what the job printed, and Slurm's lines about it)."""
    return Path(run.output_path).read_text(errors="replace").splitlines()


def runs_of(job_id: int) -> list[ExecutorRun]:
    return list(ExecutorRun.objects.filter(job_id=job_id).select_related("node").order_by("submitted_at", "id"))


# --- the cases ------------------------------------------------------------------------

def test_a_job_runs_in_slurm_on_the_node_and_gpu_type_the_round_chose_and_succeeds(start_stack):
    stack = start_stack(theta=1)
    job_id = submit(stack, 60)

    seen = {}

    def running_on_both_sides() -> bool:
        seen["slurm"], seen["api"] = stack.running_in_slurm(job_id), stack.job(job_id)
        return seen["slurm"] is not None and seen["api"]["state"] == "running" and bool(seen["api"]["allocations"])

    wait_for(running_on_both_sides, "the job running in Slurm and in the API", stack.every_log(), 90)
    slurm_run, (allocation,) = seen["slurm"], seen["api"]["allocations"]
    # Slurm runs it where the round put it: that node, one GPU of that type; the index Slurm
    # chose is the one GOGH's allocation now names.
    assert slurm_run["nodes"] == allocation["node"], (slurm_run["nodes"], allocation)
    assert slurm_run["tres_per_node"] == f"gres:gpu:{allocation['gpu_type']}:1", slurm_run["tres_per_node"]
    gpu = Gpu.objects.get(uuid=allocation["gpu"])
    assert slurm_run["gres_detail"] == [f"gpu:{allocation['gpu_type']}:1(IDX:{gpu.index})"], slurm_run["gres_detail"]

    done = stack.wait_job(job_id, lambda job: job["state"] in ENDED, "its end")
    assert (done["state"], done["steps_done"], done["restarts"]) == ("succeeded", 60, 0), done["state_reason"]
    (run,) = runs_of(job_id)
    assert run.external_id == str(slurm_run["job_id"]) and run.settled_at is not None and run.state == "succeeded"
    assert (run.node.hostname, run.gpu_type, run.num_gpus, run.shares) == (allocation["node"], allocation["gpu_type"],
                                                                            1, None)
    (ended,) = slurm_runs(stack, job_id)
    assert (ended["job_state"], ended["exit_code"]) == ("COMPLETED", 0)
    lines = output(run)
    assert lines[0] == "started at step 0" and lines[-1] == "done at step 60", lines[:3] + lines[-3:]
    assert f"gpus {gpu.index}" in lines  # Slurm's CUDA_VISIBLE_DEVICES: the GPU GOGH recorded


def test_two_jobs_placed_together_share_one_gpu_through_slurm_shards(start_stack):
    stack = start_stack(theta=2, beat=False)
    # Both wait while Slurm's nodes are down (as Slurm's inventory service records them until
    # the first sync, which beat runs), so that one round places them together.
    executor_inventory_apply(manager="slurm", holders={}, nodes=[
        {"name": name, "up": False, "reason": "not synced yet", "gpus": {name.removeprefix("n-"): 4}}
        for name in NODES])
    first, second = submit(stack, 80), submit(stack, 80)
    stack.start_beat()

    seen = {}

    def both_running() -> bool:
        seen.update({job_id: (stack.running_in_slurm(job_id), stack.job(job_id)) for job_id in (first, second)})
        return all(run and job["state"] == "running" for run, job in seen.values())

    wait_for(both_running, "both jobs running in Slurm and in the API", stack.every_log(), 90)
    (a,), (b,) = seen[first][1]["allocations"], seen[second][1]["allocations"]
    assert (a["partners"], b["partners"]) == ([second], [first]) and a["gpu"] == b["gpu"], (a, b)
    for job_id in (first, second):
        slurm_run = seen[job_id][0]
        # 2 shards per GPU, shared by 2: one shard each, on the node the round chose.
        assert (slurm_run["nodes"], slurm_run["tres_per_node"]) == (a["node"], "gres:shard:1"), slurm_run
        (run,) = runs_of(job_id)
        assert (run.shares, run.node.hostname) == (1, a["node"])
    # Slurm cannot be told which GPU a shard lands on: GOGH keeps the pair's allocations on one GPU.
    assert seen[first][0]["gres_detail"][0].startswith("shard:1(IDX:")

    for job_id in (first, second):
        done = stack.wait_job(job_id, lambda job: job["state"] in ENDED, "its end")
        assert (done["state"], done["steps_done"], done["restarts"]) == ("succeeded", 80, 0), done["state_reason"]
        assert [job["job_state"] for job in slurm_runs(stack, job_id)] == ["COMPLETED"]


def test_a_job_cancelled_through_the_api_is_stopped_in_slurm(start_stack):
    stack = start_stack(theta=1)
    job_id = submit(stack, 600)
    wait_for(lambda: stack.running_in_slurm(job_id), "the job running in Slurm", stack.every_log(), 90)

    status, body = call(stack.base, f"/api/jobs/{job_id}/cancel/", stack.token, {"reason": "not needed"})
    assert status == 200 and json.loads(body)["state"] == "cancelled", body
    wait_for(lambda: all(run["job_state"] not in LIVE for run in slurm_runs(stack, job_id)), "the Slurm job's end",
             stack.every_log(), 60)
    wait_for(lambda: ExecutorRun.objects.filter(job_id=job_id, settled_at__isnull=False).exists(),
             "the run settled", stack.every_log(), 30)

    (run,) = runs_of(job_id)
    assert run.stop_requested_at is not None, run
    # The notice reached the job (it checkpointed and exited 75); it stays cancelled, not resumed.
    assert output(run)[-1].startswith("preempted at step "), output(run)[-3:]
    job = stack.job(job_id)
    assert job["state"] == "cancelled" and job["state_reason"] == "Cancelled by alice. not needed", job
    assert job["restarts"] == 0 and len(slurm_runs(stack, job_id)) == 1


def test_a_job_failing_with_exit_code_3_fails_with_that_status(start_stack):
    stack = start_stack(theta=1)
    job_id = submit(stack, 100, fail="--exit-code 3 --fail-at 5")

    done = stack.wait_job(job_id, lambda job: job["state"] in ENDED, "its end")
    assert done["state"] == "failed" and "Exited with status 3" in done["state_reason"], done["state_reason"]
    assert done["restarts"] == 0 and done["steps_done"] == 5
    (slurm_run,) = slurm_runs(stack, job_id)
    assert (slurm_run["job_state"], slurm_run["exit_code"]) == ("FAILED", 3 << 8)  # a wait status
    (run,) = runs_of(job_id)
    assert (run.state, run.exit_code, run.settled_at is not None) == ("failed", 3, True)
    assert output(run)[-1] == "failing at step 5 with status 3"


@pytest.fixture
def drained():
    """drain(node): drain a node in Slurm as an operator does; resumed at teardown."""
    nodes = []

    def drain(node: str) -> None:
        nodes.append(node)
        slurm("scontrol", "update", f"NodeName={node}", "State=DRAIN", "Reason=h4e2e test drain")

    yield drain
    for node in nodes:
        subprocess.run(["scontrol", "update", f"NodeName={node}", "State=RESUME"], capture_output=True, timeout=30)


def test_jobs_on_a_node_drained_in_slurm_are_replaced_once_and_resume_from_their_checkpoint(start_stack, drained):
    stack = start_stack(theta=1)
    steps = 300
    ids = [submit(stack, steps), submit(stack, steps)]

    def checkpointed(job: dict) -> bool:
        return job["state"] == "running" and (job["checkpoint_step"] or 0) >= 10 and bool(job["allocations"])

    jobs = {job_id: stack.wait_job(job_id, checkpointed, "running with a checkpoint") for job_id in ids}
    node = jobs[ids[0]]["allocations"][0]["node"]
    on_node = [job_id for job_id, job in jobs.items() if job["allocations"][0]["node"] == node]
    drained_at = timezone.now()
    drained(node)

    for job_id in ids:
        done = stack.wait_job(job_id, lambda job: job["state"] in ENDED, "its end", timeout=180)
        assert (done["state"], done["steps_done"]) == ("succeeded", steps), done["state_reason"]
    assert not Allocation.objects.filter(gpu__node__hostname=node, start__gte=drained_at).exists()
    for job_id in on_node:
        job = Job.objects.get(pk=job_id)
        (interruption,) = job.interruptions.all()  # re-placed exactly once
        assert interruption.kind == "node_down" and interruption.was_running and job.restarts == 1, interruption
        first, second = runs_of(job_id)
        assert first.node.hostname == node and second.node.hostname != node, (first, second)
        assert [run["nodes"] for run in slurm_runs(stack, job_id)] == [node, second.node.hostname]
        made = [int(line.split()[1].removeprefix("step=")) for line in output(first)
                if line.startswith("GOGH_CHECKPOINT ")]
        resumed = interruption.resume_step
        # The second run, by its own account, loaded a checkpoint of the first: where GOGH resumed it.
        assert resumed > 0 and resumed in made, (resumed, made)
        assert output(second)[0].startswith(f"resumed at step {resumed} from "), output(second)[:2]
    for job_id in set(ids) - set(on_node):
        assert Job.objects.get(pk=job_id).restarts == 0 and len(runs_of(job_id)) == 1


def test_gpus_held_by_a_job_submitted_straight_to_slurm_are_planned_around(start_stack):
    stack = start_stack(theta=1)
    foreign = slurm("sbatch", "--parsable", "-J", FOREIGN, "-w", "n-v100", "--gres=gpu:v100:4",
                    "-o", "/dev/null", "--wrap", "sleep 600").strip().split(";")[0]
    wait_for(lambda: any(job["job_state"] == "RUNNING" for job in slurm_jobs().get(FOREIGN, [])),
             "the foreign job running (other sessions' jobs may hold n-v100 for a while)", stack.every_log(), 120)
    wait_for(lambda: not Gpu.objects.filter(node__hostname="n-v100", external_holder="").exists(),
             "n-v100's GPUs held", stack.every_log(), 30)
    assert all(foreign in holder or FOREIGN in holder for holder in
               Gpu.objects.filter(node__hostname="n-v100").values_list("external_holder", flat=True))

    job_id = submit(stack, 60)
    running = stack.wait_job(job_id, lambda job: job["state"] == "running" and bool(job["allocations"]), "running")
    (allocation,) = running["allocations"]
    assert allocation["node"] != "n-v100", allocation  # v100 draws the least power, but is held
    assert [run["nodes"] for run in slurm_runs(stack, job_id)] == [allocation["node"]]
    assert not Allocation.objects.filter(gpu__node__hostname="n-v100").exists()

    slurm("scancel", foreign)  # the holder leaves: its GPUs are GOGH's to plan on again
    wait_for(lambda: not Gpu.objects.filter(node__hostname="n-v100").exclude(external_holder="").exists(),
             "n-v100's GPUs free again", stack.every_log(), 60)
    done = stack.wait_job(job_id, lambda job: job["state"] in ENDED, "its end")
    assert done["state"] == "succeeded", done["state_reason"]
