"""The demo scenario of issue 16, scripted with real processes: daphne, a rounds worker, Celery
beat and simulated agents on three nodes of three GPU types; nine jobs of 200 to 20,000 steps
and seven workloads, each with its T_min, submitted over time, a higher-priority job once the
cluster is full of long ones, then one node leaves (its agent stops) while a job runs there
(its jobs never checkpoint: that one loses its run's work). The API is polled all along, as a
user watching would, and at the end:

- `steps_done` never went down in any answer;
- every restart has a recorded interruption with its reason, shown by the API, and every
  process the agents started beyond a job's first has one;
- no interruption lost more than the work since the job's last checkpoint, and the next run
  resumed at that checkpoint (its first progress line, in the job's own output);
- the higher-priority job preempted a lower-priority one in the round that placed it, and the
  job on the node that left was interrupted for that reason;
- no job was moved more than three times, and every job succeeded.

One GPU per job (theta 1) so that four GPUs, five long jobs and then one more make the preemption
necessary. The simulated jobs run 100 times faster than real ones; those on the v100 and p100
nodes checkpoint every few seconds (and when stopped), those on the k80 node never do (a stop
loses all the work of their run). No assertion is about time."""
import json
import re
import signal
import time
from dataclasses import dataclass, field
from datetime import datetime

import pytest
from django.utils import timezone
from rest_framework.authtoken.models import Token

from catalog.services import catalog_load_reference
from scheduler.models import Allocation, Job, JobInterruption
from scheduler.services import solver_config_update

from .keep_work import JobsWatch, NodeSpec, agent_starts, job_runs, start_control_plane, tails
from .test_http_api import call

pytestmark = pytest.mark.django_db(transaction=True)

NODES = (
    NodeSpec("kw-v100", "v100:2", ("--simulate-checkpoint-interval", "3")),
    NodeSpec("kw-p100", "p100:1", ("--simulate-checkpoint-interval", "4")),
    NodeSpec("kw-k80", "k80:1", ("--simulate-checkpoint-interval", "0")),
)
GPUS = 4
LEAVING = "kw-k80"  # its agent leaves mid-run (SIGTERM), as when a node is taken out of service
SPEEDUP = 100
# (workload, total_steps, T_min): T_min well below the slowest GPU type each may use (the
# simulated truth deviates from the catalog by a per-workload factor around 1). The first
# LONG run 11 s or more on any GPU: the cluster is full of them when the urgent job comes.
JOBS = (
    ("ResNet-50 (batch size 64)", 20_000, 2.0),  # v100 or p100
    ("A3C", 20_000, 2.0),
    ("CycleGAN", 10_000, 1.5),  # v100 or p100
    ("Transformer (batch size 32)", 20_000, 2.0),
    ("ResNet-50 (batch size 64)", 10_000, 1.0),  # v100 or p100
    ("ResNet-50 (batch size 64)", 200, 0.3),
    ("LM (batch size 20)", 20_000, 10.0),
    ("Recommendation (batch size 2048)", 10_000, 4.0),
    ("ResNet-18 (batch size 64)", 20_000, 4.0),
)
LONG = 5
URGENT = ("CycleGAN", 5_000, 1.5, 10)  # (workload, total_steps, T_min, priority)
SCENARIO_TIMEOUT_S = 200
SIMJOB_START = re.compile(r"^simjob: .+ on \d+ x \S+: [\d.]+ steps/s$")  # alone (theta 1): its first line


@pytest.fixture
def scenario(spawn, agent, alice):
    catalog_load_reference()
    solver_config_update(by=None, values={"theta": 1})
    cluster = start_control_plane(spawn, hostnames=[node.hostname for node in NODES], speedup=SPEEDUP,
                                  agent_token=Token.objects.create(user=agent).key)
    for seed, node in enumerate(NODES):
        cluster.start_agent(node, seed=seed)
    cluster.wait_ready([node.hostname for node in NODES])
    return cluster, JobsWatch(cluster.base, Token.objects.create(user=alice).key)


def submit(watch: JobsWatch, workload: str, steps: int, t_min: float, priority: int = 0) -> int:
    status, body = call(watch.base, "/api/jobs/", watch.token, {
        "workload": workload, "total_steps": steps, "min_throughput": t_min, "max_gpus": 1, "priority": priority,
    })
    assert status == 201, body
    return json.loads(body)["id"]


@dataclass
class Progress:
    """Where the scenario is: the jobs submitted, the urgent one, whether the node has left."""

    waiting: list = field(default_factory=lambda: list(JOBS))
    ids: list[int] = field(default_factory=list)
    urgent: int | None = None
    left: int | None = None  # the job that ran on LEAVING when its agent left
    left_at: datetime | None = None  # when it was told to leave


def run_scenario(cluster, watch: JobsWatch) -> Progress:
    """Poll the API every 0.5 s and submit a job every second or so: the LONG ones; once every
    GPU runs one of them with another waiting, the urgent job; the others, and meanwhile, once a
    job on LEAVING has made progress, that node's agent leaves; then poll until every job ended."""
    now = Progress()
    for polls in range(1, SCENARIO_TIMEOUT_S * 2):
        items = watch.poll()
        states = [item["state"] for item in items]
        if now.urgent is None and len(now.ids) == LONG and states.count("running") == GPUS and "pending" in states:
            now.urgent = submit(watch, *URGENT)
        elif now.waiting and polls % 2 == 0 and (len(now.ids) < LONG or now.urgent is not None):
            now.ids.append(submit(watch, *now.waiting.pop(0)))
        elif now.urgent is not None and now.left is None and (job_id := progressing_on(LEAVING, items)):
            now.left, now.left_at = job_id, timezone.now()
            cluster.agents[LEAVING].send_signal(signal.SIGTERM)
        elif now.left is not None and all(state in ("succeeded", "failed", "cancelled") for state in states):
            return now
        time.sleep(0.5)
    summary = {item["id"]: (item["state"], item["steps_done"], item["total_steps"]) for item in watch.poll()}
    pytest.fail(f"the scenario did not end within {SCENARIO_TIMEOUT_S} s ({now}): {summary}\n"
                + tails(cluster.logs + sorted(cluster.spawn.folder.glob("jobs/*/*.out"))))


def progressing_on(hostname: str, items: list[dict]) -> int | None:
    """A job running on `hostname` that has progressed beyond where its run resumed, if any."""
    for item in items:
        if item["state"] == "running" and item["current_step"] > item["resume_step"] and any(
                allocation["node"] == hostname for allocation in item["allocations"]):
            return item["id"]
    return None


def test_jobs_keep_their_work_through_the_demo_scenario(scenario):
    cluster, watch = scenario
    now = run_scenario(cluster, watch)
    everyone = [*now.ids, now.urgent]
    logs = cluster.logs + sorted(cluster.spawn.folder.glob("jobs/*/*.out"))
    for job_id in everyone:
        job = Job.objects.get(pk=job_id)
        assert job.state == "succeeded" and job.steps_done == job.total_steps, (job_id, job.state_reason, tails(logs))
        steps_done_never_decreases(watch, job_id)
        interruptions = list(job.interruptions.order_by("at", "id"))
        restarts_have_reasons(watch, job, interruptions, agent_starts(cluster.logs, job_id))
        status, body = call(watch.base, f"/api/jobs/{job_id}/interruptions/", watch.token)
        shown = [(i["kind"], i["reason"], i["resume_step"], i["steps_lost"]) for i in json.loads(body)["results"]]
        assert status == 200 and sorted(shown) == sorted(
            (i.kind, i.reason, i.resume_step, i.steps_lost) for i in interruptions), (job_id, shown)
        runs = job_runs(cluster.job_logs, job_id, SIMJOB_START.match)
        work_lost_is_bounded_by_checkpoints(watch, job, interruptions, runs)
        placements = Allocation.objects.filter(job=job).values("solve_run").distinct().count()
        assert len(interruptions) <= 3 and placements <= 4, (job_id, interruptions)  # at most 3 moves
    preempted_for_the_urgent_job(now.urgent)
    # Its node's agent stopped it on leaving: recorded as the node going down, or (when the job's
    # own exit 75 reached the control plane first) as a run that stopped asking to be resumed.
    # Jobs there never checkpoint: it lost (and redid) every step since where that run resumed.
    # Its node drained before its jobs were stopped, so no round placed it there again before
    # the leave (the leave would have requeued that placement: a second interruption).
    (left,) = JobInterruption.objects.filter(job_id=now.left, kind__in=["node_down", "stopped"], at__gte=now.left_at)
    assert left.was_running and left.reason.strip() and left.steps_lost == left.steps_done - left.resume_step > 0


def steps_done_never_decreases(watch: JobsWatch, job_id: int) -> None:
    """steps_done never goes down in any answer, and the run's position never passes it."""
    seen = watch.values(job_id, "steps_done")
    assert seen and all(a <= b for a, b in zip(seen, seen[1:])), (job_id, seen)
    for _, item in watch.seen[job_id]:
        assert item["resume_step"] <= item["current_step"] <= item["steps_done"], (job_id, item)


def restarts_have_reasons(watch: JobsWatch, job: Job, interruptions: list, starts: int) -> None:
    """Each restart the API counted is a recorded interruption of a running job, with its kind
    and reason; each process an agent started beyond the first follows a recorded interruption."""
    restarts_seen = watch.values(job.pk, "restarts")
    assert all(a <= b for a, b in zip(restarts_seen, restarts_seen[1:])), (job.pk, restarts_seen)
    ran = [i for i in interruptions if i.was_running]
    assert job.restarts == restarts_seen[-1] == len(ran), (job.pk, job.restarts, interruptions)
    for interruption in interruptions:
        assert interruption.kind in {"moved", "preempted", "node_down", "gpu_failed", "stopped"}
        assert interruption.reason.strip(), (job.pk, interruption)
    assert 1 <= starts <= 1 + len(interruptions), (job.pk, starts, interruptions)


def work_lost_is_bounded_by_checkpoints(watch: JobsWatch, job: Job, interruptions: list, runs: list) -> None:
    """An interruption resumes the job at its last checkpoint (0 without one: all is lost), and
    loses exactly the steps between it and where the run was; the next run started there.
    Every run starts at 0 or at a checkpoint an earlier run of the job made."""
    made = {step for run in runs for step in run.checkpoints}
    assert runs and runs[0].start == 0, (job.pk, runs)
    for run in runs[1:]:
        assert run.start in made | {0}, (job.pk, run.start, sorted(made))
    for interruption in (i for i in interruptions if i.was_running):
        known = watch.checkpoint_known_before(job.pk, interruption.at)
        assert interruption.resume_step >= known, (job.pk, known, interruption)
        assert interruption.resume_step in made | {0}, (job.pk, interruption.resume_step, sorted(made))
        assert interruption.steps_lost == max(0, interruption.steps_done - interruption.resume_step)
        assert any(run.start == interruption.resume_step for run in runs), (job.pk, interruption, runs)
    assert job.steps_lost == sum(i.steps_lost for i in interruptions if i.was_running)


def preempted_for_the_urgent_job(urgent: int) -> None:
    """The urgent job was placed by a round that preempted a lower-priority job, with a reason."""
    placed_by = Allocation.objects.filter(job_id=urgent).order_by("start").values_list("solve_run", flat=True)[0]
    victims = JobInterruption.objects.filter(kind="preempted", solve_run_id=placed_by).select_related("job")
    assert victims, list(JobInterruption.objects.values_list("job_id", "kind", "reason", "solve_run_id"))
    assert all(victim.job.priority < URGENT[3] and victim.job_id != urgent for victim in victims)
