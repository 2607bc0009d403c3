"""Reclaiming borrowed quota end to end (issue 19), with real processes: daphne, a rounds
worker, Celery beat (a periodic round every 5 s) and one simulated node agent whose jobs run
their own commands (tests/integration/jobs/slurm_steps_job.py under the job contract: a step
every 0.05 s, a checkpoint every 10 steps and on SIGTERM, then exit 75).

Tenant `owner` has a quota of the cluster's one V100, tenant `borrower` none. The borrower's
job (priority 1) runs on the owner's idle quota; once it has checkpointed and gone beyond, the
owner submits a job of priority 0 that needs the GPU. The round that places the owner's job
preempts the borrower's (quota before priority, as Kueue's reclaimWithinCohort: Any); the
borrower's job, told by SIGTERM, checkpoints and exits as preempted by itself (its last line,
not a kill after its grace); while the owner's job runs, the borrower's waits with a pending
reason naming quota; once the owner's job is done, it resumes at its checkpoint and succeeds.
steps_done never goes down in any answer of the API. No assertion is about time.
"""
import json
import sys

import pytest
from django.utils import timezone
from rest_framework.authtoken.models import Token

from catalog.models import Measurement
from scheduler.models import Allocation, Job, JobInterruption, Tenant, TenantQuota
from scheduler.services import solver_config_update

from .keep_work import JobsWatch, NodeSpec, job_runs, start_control_plane, tails, wait_for
from .test_http_api import call

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres_tier]

NODE = NodeSpec("quota-v100", "v100:1", ("--run-commands",))
BORROWER_STEPS = 400  # 20 s: still running when the owner's round comes, however busy the machine
OWNER_STEPS = 200  # 10 s: a periodic round comes while it runs
GRACE_S = 5
JOB = "tests/integration/jobs/slurm_steps_job.py"


def submit(watch: JobsWatch, steps: int, priority: int) -> int:
    status, body = call(watch.base, "/api/jobs/", watch.token, {
        "workload": "ResNet-50 (batch size 64)", "min_throughput": 0.1, "max_gpus": 1, "total_steps": steps,
        "priority": priority, "preemption_grace_s": GRACE_S,
        "command": f"{sys.executable} {JOB} --steps {steps} --sleep 0.05 --checkpoint-every 10",
    })
    assert status == 201, body
    return json.loads(body)["id"]


def item_of(watch: JobsWatch, job_id: int) -> dict:
    return next(item for item in watch.poll() if item["id"] == job_id)


@pytest.fixture
def cluster(spawn, agent, make_user, resnet50, v100):
    Measurement.objects.create(workload=resnet50, gpu_type=v100, throughput=4.4, source="reference",
                               observed_at=timezone.now())
    solver_config_update(by=None, values={"theta": 1})  # one job per GPU: the owner's cannot share it
    owner, borrower = make_user("olga", tenant="owner"), make_user("boris", tenant="borrower")
    TenantQuota.objects.create(tenant=Tenant.objects.get(slug="owner"), gpu_type=v100, gpus=1)
    cluster = start_control_plane(spawn, hostnames=[NODE.hostname], speedup=1,
                                  agent_token=Token.objects.create(user=agent).key)
    cluster.start_agent(NODE)
    cluster.wait_ready([NODE.hostname])
    cluster.owner = JobsWatch(cluster.base, Token.objects.create(user=owner).key)
    cluster.borrower = JobsWatch(cluster.base, Token.objects.create(user=borrower).key)
    return cluster


def every_log(cluster) -> list:
    return cluster.logs + sorted(cluster.spawn.folder.glob("jobs/*/*.out"))


def test_an_owner_reclaims_its_quota_from_a_borrower_who_resumes_at_its_checkpoint(cluster):
    logs = every_log(cluster)
    borrowed = submit(cluster.borrower, BORROWER_STEPS, priority=1)

    def checkpointed_and_past_it() -> bool:
        item = item_of(cluster.borrower, borrowed)
        return item["state"] == "running" and (item["checkpoint_step"] or 0) > 0 and (
            item["current_step"] > item["checkpoint_step"])

    wait_for(checkpointed_and_past_it, "the borrower's checkpoint and progress beyond it", logs, 60)
    owned = submit(cluster.owner, OWNER_STEPS, priority=0)
    wait_for(lambda: JobInterruption.objects.filter(job_id=borrowed).exists(), "the reclaim", every_log(cluster), 30)

    reasons = []

    def owner_done() -> bool:
        item = item_of(cluster.borrower, borrowed)
        if item["state"] == "pending":
            reasons.append(item["pending_reason"])
        return Job.objects.get(pk=owned).state == "succeeded"

    wait_for(owner_done, "the owner's job's success", every_log(cluster), 60)
    wait_for(lambda: item_of(cluster.borrower, borrowed)["state"] == "succeeded", "the borrower's job's success",
             every_log(cluster), 60)
    logs = every_log(cluster)

    # One round placed the owner's job and preempted the borrower's, for quota, with a reason.
    (interruption,) = JobInterruption.objects.filter(job_id=borrowed)
    assert interruption.kind == "preempted" and interruption.was_running and interruption.reason.strip()
    assert Allocation.objects.filter(job_id=owned, solve_run=interruption.solve_run).exists(), tails(logs)
    assert list(Allocation.objects.filter(job_id=owned).values_list("gpu__gpu_type__name", flat=True)) == ["v100"]
    # While the owner's job held the GPU, the borrower's job waited for quota, and said so.
    assert reasons and any("quota" in reason for reason in reasons), reasons
    # Told by SIGTERM, it checkpointed where it was and exited as preempted by itself (a kill
    # after the grace would have cut it before that last line).
    first, second = job_runs(cluster.job_logs, borrowed, lambda line: line.startswith(("started", "resumed")))
    stop = first.checkpoints[-1]
    assert first.lines[-1] == f"preempted at step {stop}" and first.steps[-1] == stop, first.lines[-3:]
    assert (interruption.resume_step, interruption.steps_done, interruption.steps_lost) == (stop, stop, 0)
    # It resumed there, by its own account, and went on to the end; steps_done never went down.
    assert second.lines[0] == f"resumed at step {stop} from {first.paths[stop]}", second.lines[:2]
    # (its first progress line is the first step it made there)
    assert second.start == stop + 1 and second.steps == sorted(second.steps) and second.steps[-1] == BORROWER_STEPS
    seen = cluster.borrower.values(borrowed, "steps_done")
    assert all(a <= b for a, b in zip(seen, seen[1:])), seen
    job = Job.objects.get(pk=borrowed)
    assert (job.state, job.steps_done, job.restarts, job.steps_lost) == ("succeeded", BORROWER_STEPS, 1, 0)
