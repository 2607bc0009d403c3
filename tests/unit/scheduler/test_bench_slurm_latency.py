"""bench_slurm_latency's reading of what the control plane recorded: the deciding round of each
job's first started run, the figures from it, and a refusal when no Slurm node is ready (the
benchmark against a live stack is run by hand: docs/executors.md)."""
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from scheduler.management.commands import bench_slurm_latency as bench
from scheduler.models import Allocation, ExecutorRun, Job, SolveRun
from telemetry.models import Gpu, Node

pytestmark = pytest.mark.django_db


# One instant for the module: taking now() on each call let a test straddle a second's boundary,
# so that its expected at(0) was a second later than the rows' (seen in CI).
T0 = timezone.now().replace(microsecond=0)


def at(seconds: float):
    return T0 + timedelta(seconds=seconds)


def test_the_report_measures_from_the_decision_to_slurm_s_start():
    samples = [bench.Sample(decided_at=at(0), submitted_at=at(0.2 * n), started_at=at(n)) for n in range(1, 21)]
    report = bench.latency_report(samples, submitted=25)
    assert report["slurm.jobs"] == 20 and report["slurm.jobs_submitted"] == 25
    assert report["slurm.decision_to_running_s.median"] == 10.5
    assert report["slurm.decision_to_running_s.p95"] == pytest.approx(19.05)
    assert report["slurm.decision_to_submitted_s.median"] == pytest.approx(2.1)
    assert report["slurm.submitted_to_running_s.median"] == pytest.approx(8.4)
    assert "| RUNNING in Slurm | 10.50 s | 19.05 s |" in bench.format_table(report)


def test_no_job_that_ran_reports_no_figures():
    report = bench.latency_report([], submitted=3)
    assert report["slurm.jobs"] == 0 and report["slurm.decision_to_running_s.median"] is None
    assert "| RUNNING in Slurm | - | - |" in bench.format_table(report)


def test_each_job_counts_its_first_started_run_from_the_round_that_placed_it(alice, v100, resnet50):
    node = Node.objects.create(hostname="n-v100", managed_by="slurm")
    gpu = Gpu.objects.create(node=node, index=0, uuid="slurm:n-v100:0", gpu_type=v100)
    job = Job.objects.create(owner=alice, tenant=alice.membership.tenant, workload=resnet50, min_throughput=1,
                             max_gpus=1, state="running")
    first_round = SolveRun.objects.create(trigger="submit", solver="ilp", finished_at=at(0))
    later_round = SolveRun.objects.create(trigger="periodic", solver="ilp", finished_at=at(50))
    Allocation.objects.create(job=job, gpu=gpu, solve_run=first_round, start=at(0), end=at(60))
    Allocation.objects.create(job=job, gpu=gpu, solve_run=later_round, start=at(50))
    ExecutorRun.objects.create(job=job, executor="slurm", external_id="7", submitted_at=at(1), started_at=at(3),
                               settled_at=at(60), state="failed")
    ExecutorRun.objects.create(job=job, executor="slurm", external_id="8", submitted_at=at(61), started_at=at(62))
    never_started = Job.objects.create(owner=alice, tenant=alice.membership.tenant, workload=resnet50,
                                       min_throughput=1, max_gpus=1, pending_reason="Waiting.")

    (sample,) = bench.samples([job.pk, never_started.pk])
    assert sample == bench.Sample(decided_at=at(0), submitted_at=at(1), started_at=at(3))
    assert bench.started_count([job.pk, never_started.pk]) == 1


def test_without_a_ready_slurm_node_it_refuses_and_submits_nothing(alice, v100, resnet50):
    Node.objects.create(hostname="gpu-1")  # an agent's node: not Slurm's
    with pytest.raises(CommandError, match="No Slurm-managed node is ready"):
        call_command("bench_slurm_latency", "--jobs", "2", "--workload", resnet50.name)
    assert not Job.objects.exists()
