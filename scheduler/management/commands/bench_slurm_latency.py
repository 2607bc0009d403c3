"""manage.py bench_slurm_latency [--jobs 50] [--run-s 5] [--json OUT]: from a round's decision to
the job RUNNING in Slurm, measured on a running control plane in slurm mode (docs/executors.md).

The stack runs elsewhere (`GOGH_EXECUTOR=slurm manage.py run_stack`, the same DATABASE_URL and
broker as this command); this command submits N small jobs through scheduler.services as a
bench tenant's user, waits until every one has started in Slurm (the cluster runs them wave
after wave when N exceeds its GPUs), then cancels those not ended and reports, per job, from
the finish of the round that placed it (the SolveRun of its allocation) to Slurm's start time
(ExecutorRun.started_at) and to GOGH's sbatch (ExecutorRun.submitted_at). Slurm stamps start
times in whole seconds, so each figure is exact to about a second: a job that started within
the second of its decision can read slightly negative.
"""
import json
import statistics
import time
from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db.models import Q

from catalog.models import Workload
from gogh_web.cli_args import output_file, positive_float, positive_int
from scheduler import services
from scheduler.lifecycle import IllegalTransition
from scheduler.models import Allocation, ExecutorRun, Job, Membership, Tenant
from telemetry.ingest_load import percentile
from telemetry.models import Node

BENCH = "bench-slurm"  # the bench tenant's slug and its user's name
ENDED = ("succeeded", "failed", "cancelled")


@dataclass(frozen=True)
class Sample:
    """One job's first run: when the round that placed it finished, when GOGH submitted it to
    Slurm, when Slurm started it."""

    decided_at: datetime
    submitted_at: datetime
    started_at: datetime


def latency_report(samples: list[Sample], *, submitted: int) -> dict:
    """The stable report keys: medians and p95s in seconds over the jobs that ran."""
    to_running = [(s.started_at - s.decided_at).total_seconds() for s in samples]
    to_submitted = [(s.submitted_at - s.decided_at).total_seconds() for s in samples]
    submitted_to_running = [(s.started_at - s.submitted_at).total_seconds() for s in samples]

    def rounded(value):
        return None if value is None else round(value, 3)

    return {
        "slurm.jobs": len(samples),
        "slurm.jobs_submitted": submitted,
        "slurm.decision_to_running_s.median": rounded(statistics.median(to_running)) if samples else None,
        "slurm.decision_to_running_s.p95": rounded(percentile(to_running, 95)),
        "slurm.decision_to_running_s.max": rounded(max(to_running, default=None)),
        "slurm.decision_to_submitted_s.median": rounded(statistics.median(to_submitted)) if samples else None,
        "slurm.decision_to_submitted_s.p95": rounded(percentile(to_submitted, 95)),
        "slurm.submitted_to_running_s.median":
            rounded(statistics.median(submitted_to_running)) if samples else None,
        "slurm.submitted_to_running_s.p95": rounded(percentile(submitted_to_running, 95)),
    }


def format_table(report: dict) -> str:
    def seconds(key: str) -> str:
        value = report[key]
        return "-" if value is None else f"{value:.2f} s"

    return "\n".join([
        f"jobs that ran in Slurm: {report['slurm.jobs']} of {report['slurm.jobs_submitted']}",
        "| from the round's decision to | median | p95 |",
        "|---|---|---|",
        f"| sbatch (GOGH submitted it) | {seconds('slurm.decision_to_submitted_s.median')} "
        f"| {seconds('slurm.decision_to_submitted_s.p95')} |",
        f"| RUNNING in Slurm | {seconds('slurm.decision_to_running_s.median')} "
        f"| {seconds('slurm.decision_to_running_s.p95')} |",
    ])


class Command(BaseCommand):
    help = "Submit N small jobs to a control plane in slurm mode; report decision -> RUNNING in Slurm."

    def add_arguments(self, parser):
        parser.add_argument("--jobs", type=positive_int, default=50)
        parser.add_argument("--run-s", type=positive_float, default=5.0, help="Seconds each job runs (sleep).")
        parser.add_argument("--workload", default="ResNet-18 (batch size 64)", help="A workload the catalog measured.")
        parser.add_argument("--min-throughput", type=positive_float, default=0.1, help="Each job's T_min.")
        parser.add_argument("--timeout", type=positive_float, default=900.0,
                            help="Seconds to wait for every job to start in Slurm.")
        parser.add_argument("--json", type=output_file, help="Where to write the JSON report.")

    def handle(self, *args, **options):
        if not Node.objects.filter(managed_by="slurm", state="ready").exists():
            raise CommandError("No Slurm-managed node is ready: run the stack with GOGH_EXECUTOR=slurm "
                               "(manage.py run_stack) on this database first.")
        try:
            workload = Workload.objects.get(name=options["workload"])
        except Workload.DoesNotExist:
            raise CommandError(f"No workload {options['workload']!r} (manage.py load_reference_catalog adds "
                               "the reference ones).") from None
        user = bench_user()
        ids = [services.job_submit(owner=user, workload=workload, min_throughput=options["min_throughput"], max_gpus=1,
                                   name=f"bench-slurm-{number}", command=f"sleep {options['run_s']:g}").job.pk
               for number in range(options["jobs"])]
        self.stderr.write(f"{len(ids)} jobs submitted as {BENCH}; waiting for each to start in Slurm ...")
        try:
            self._wait(ids, options["timeout"])
        finally:
            cancelled = cancel_unfinished(ids, user)
            self.stderr.write(f"{cancelled} jobs not ended cancelled")
        report = latency_report(samples(ids), submitted=len(ids))
        if options["json"]:
            options["json"].write_text(json.dumps(report, indent=2))
        self.stdout.write(format_table(report))

    def _wait(self, ids: list[int], timeout: float) -> None:
        deadline, said = time.monotonic() + timeout, 0.0
        while time.monotonic() < deadline:
            started = started_count(ids)
            if started == len(ids):
                return
            if time.monotonic() - said > 10:
                self.stderr.write(f"  {started} of {len(ids)} started")
                said = time.monotonic()
            time.sleep(0.5)
        self.stderr.write(f"timeout: {started_count(ids)} of {len(ids)} started in {timeout:g} s; reporting those")


def bench_user():
    """The bench tenant's user, created once (its jobs are easy to tell apart and to clean up)."""
    user, _ = get_user_model().objects.get_or_create(username=BENCH)
    tenant, _ = Tenant.objects.get_or_create(slug=BENCH, defaults={"name": "Slurm latency benchmark"})
    Membership.objects.get_or_create(user=user, defaults={"tenant": tenant})
    return user


def started_count(ids: list[int]) -> int:
    """Jobs whose first run Slurm has started (a job that ended without one counts too: it will
    never start, and waiting for it would only run into the timeout)."""
    return Job.objects.filter(pk__in=ids).filter(
        Q(executor_runs__started_at__isnull=False) | Q(state__in=ENDED)).distinct().count()


def cancel_unfinished(ids: list[int], user) -> int:
    cancelled = 0
    for job in Job.objects.filter(pk__in=ids).exclude(state__in=ENDED):
        try:
            services.job_cancel(job=job, by=user, reason="bench_slurm_latency is done")
            cancelled += 1
        except IllegalTransition:  # it ended meanwhile
            continue
    return cancelled


def samples(ids: list[int]) -> list[Sample]:
    """Each job's first run that Slurm started, and the round whose allocation it ran (the
    newest placement before its submission)."""
    found = []
    for run in ExecutorRun.objects.filter(job_id__in=ids, started_at__isnull=False).order_by("job_id", "submitted_at"):
        if found and found[-1][0] == run.job_id:
            continue
        allocation = (Allocation.objects.filter(job_id=run.job_id, solve_run__isnull=False, start__lte=run.submitted_at)
                      .select_related("solve_run").order_by("-start").first())
        if allocation is None:
            continue
        decided = allocation.solve_run.finished_at or allocation.start
        found.append((run.job_id, Sample(decided_at=decided, submitted_at=run.submitted_at,
                                         started_at=run.started_at)))
    return [sample for _, sample in found]
