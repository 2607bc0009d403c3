"""The scheduler's metric families for /metrics (composed with the other apps' by
gogh_web.metrics): the queue, the work jobs lost to restarts, the solver's rounds, how far
running jobs' observed throughput is from what was predicted, the executor's syncs, and the
tenants' quotas, GPUs in use and borrowed, fair-share factors and energy this month.
docs/telemetry.md lists them all."""
from django.db.models import Count, Sum
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, SummaryMetricFamily

from .executors.base import RUN_STATES
from .lifecycle import JobState
from .models import (
    Allocation,
    ExecutorRun,
    ExecutorSync,
    InterruptionKind,
    Job,
    JobInterruption,
    SolveRun,
    SolveStatus,
    Tenant,
)
from .selectors import observed_throughputs
from .tenancy.selectors import tenant_overviews


def job_families():
    """Jobs by state, then what restarts cost them."""
    counts = dict(Job.objects.values_list("state").annotate(n=Count("id")).order_by())
    family = GaugeMetricFamily("gogh_jobs", "Jobs by state (pending: the queue length).", labels=["state"])
    for state in JobState:
        family.add_metric([state.value], counts.get(state.value, 0))
    yield family
    yield from restart_families()
    yield from interruption_families()
    yield from exploration_families()


def restart_families():
    """Restarts and the steps they lost, per workload: the jobs' own counters summed, a label per
    workload and not per job, so series stay few. Counters: they only grow while jobs are kept."""
    per_workload = (
        Job.objects.values_list("workload__name").annotate(restarts=Sum("restarts"), lost=Sum("steps_lost")).order_by()
    )
    restarts = CounterMetricFamily(
        "gogh_job_restarts", "Runs of jobs interrupted after they started, per workload.", labels=["workload"]
    )
    lost = CounterMetricFamily(
        "gogh_job_steps_lost", "Steps jobs had done beyond their last checkpoint when interrupted (redone).",
        labels=["workload"],
    )
    for workload, restarted, steps in per_workload:
        restarts.add_metric([workload], restarted)
        lost.add_metric([workload], steps)
    yield restarts
    yield lost


def interruption_families():
    """Interruptions per kind (every kind listed), and the restart overhead measured so far."""
    kinds = dict(JobInterruption.objects.values_list("kind").annotate(n=Count("id")).order_by())
    interruptions = CounterMetricFamily(
        "gogh_job_interruptions", "Jobs stopped before their end to run again, per kind.", labels=["kind"]
    )
    for kind in InterruptionKind:
        interruptions.add_metric([kind.value], kinds.get(kind.value, 0))
    yield interruptions
    measured = JobInterruption.objects.filter(overhead_s__isnull=False)
    measured = measured.aggregate(n=Count("id"), total=Sum("overhead_s"))
    yield SummaryMetricFamily(
        "gogh_job_restart_overhead_seconds",
        "Measured restart overhead: from a restarted run's start to its first progress beyond its resume step.",
        count_value=measured["n"], sum_value=measured["total"] or 0.0,
    )


def exploration_families():
    """Exploration (docs/exploration.md): the pending jobs the latest round found no configuration
    serving (its decision's `stranded`; dry and superseded rounds aside, shadow ones counted: they
    judge the same queue), the probes running now, and the probes started so far (the jobs' own
    counts summed: a counter while jobs are kept)."""
    last = (SolveRun.objects.filter(dry_run=False).exclude(status=SolveStatus.SUPERSEDED)
            .order_by("-started_at", "-id").values_list("decision", flat=True).first())
    stranded = [int(job_id) for job_id in (last or {}).get("stranded", [])]
    yield GaugeMetricFamily(
        "gogh_jobs_stranded", "Pending jobs that no GPU type is predicted to serve (the latest round's).",
        value=Job.objects.filter(pk__in=stranded, state=JobState.PENDING.value).count(),
    )
    yield GaugeMetricFamily(
        "gogh_probes_running", "Jobs probing now: a short run on a type the catalog predicts below their T_min.",
        value=Job.objects.exclude(probe_gpu_type="").filter(
            state__in=[JobState.PLACED.value, JobState.RUNNING.value]).count(),
    )
    yield CounterMetricFamily(
        "gogh_probes", "Probes started (the counts of the jobs kept).",
        value=Job.objects.aggregate(n=Sum("probes"))["n"] or 0,
    )


def solve_families():
    """Rounds' wall time: all of them, and the latest."""
    finished = SolveRun.objects.filter(duration_s__isnull=False)
    totals = finished.aggregate(n=Count("id"), total=Sum("duration_s"))
    yield SummaryMetricFamily(
        "gogh_solve_duration_seconds", "Wall time of scheduling rounds (solve runs).",
        count_value=totals["n"], sum_value=totals["total"] or 0.0,
    )
    last = finished.order_by("-started_at", "-id").first()
    if last is not None:
        gauge = GaugeMetricFamily(
            "gogh_solve_last_duration_seconds", "Wall time of the latest solve run.", labels=["solver", "status"]
        )
        gauge.add_metric([last.solver, last.status], last.duration_s)
        yield gauge


def prediction_families():
    """For running jobs with a predicted throughput (their allocations') and an observed
    one (their latest telemetry measurement): the mean absolute relative prediction error,
    and how many run below their T_min (SLO violations now)."""
    running = {job.pk: job for job in Job.objects.filter(state=JobState.RUNNING.value)}
    predicted = dict(
        Allocation.objects.filter(job_id__in=running, end__isnull=True, predicted_throughput__gt=0)
        .values_list("job_id", "predicted_throughput")
    )
    observed = observed_throughputs(running)
    errors = [abs(observed[pk] - predicted[pk]) / predicted[pk] for pk in observed if pk in predicted]
    error = GaugeMetricFamily(
        "gogh_prediction_abs_error_ratio",
        "Mean |observed - predicted| / predicted throughput over running jobs with both.",
    )
    if errors:
        error.add_metric([], sum(errors) / len(errors))
    yield error
    yield GaugeMetricFamily(
        "gogh_jobs_below_min_throughput",
        "Running jobs whose latest observed throughput is below their T_min (probes and profiling jobs not counted).",
        value=sum(1 for pk, value in observed.items()
                  if value < running[pk].min_throughput and not _measuring(running[pk])),
    )


def _measuring(job) -> bool:
    """A probe or a profiling campaign's job runs to measure, not to serve: no SLO applies."""
    return bool(job.probe_gpu_type or job.campaign_id)


def executor_families():
    """A pushing executor's syncs (scheduler.dispatch.executor_sync): the kept records by
    outcome (ok, or a command failed: the newest KEEP_SYNCS, so a gauge), the latest sync's
    control-plane CPU seconds, and the runs not yet settled by their state (every state listed)."""
    outcomes = dict(ExecutorSync.objects.values_list("ok").annotate(n=Count("id")).order_by())
    syncs = GaugeMetricFamily("gogh_executor_syncs", "Executor syncs kept (the newest 1,000), by outcome.",
                              labels=["outcome"])
    syncs.add_metric(["ok"], outcomes.get(True, 0))
    syncs.add_metric(["error"], outcomes.get(False, 0))
    yield syncs
    last = ExecutorSync.objects.filter(cpu_s__isnull=False).order_by("-started_at", "-id").first()
    cpu = GaugeMetricFamily("gogh_executor_sync_last_cpu_seconds", "Control-plane CPU seconds of the latest sync.")
    if last is not None:
        cpu.add_metric([], last.cpu_s)
    yield cpu
    states = dict(ExecutorRun.objects.filter(settled_at__isnull=True).values_list("state").annotate(n=Count("id"))
                  .order_by())
    runs = GaugeMetricFamily("gogh_executor_runs_unsettled", "Runs submitted to the executor whose end is not "
                             "applied yet, by state.", labels=["state"])
    for state in RUN_STATES:
        runs.add_metric([state], states.get(state, 0))
    yield runs


def tenant_families():
    """Per tenant (labelled by slug): its energy this UTC month (a gauge that only grows within
    the month and starts again at 0, so rate() over a month's turn is wrong: use it as is), its
    fair-share factor, and per GPU type its quota, the GPUs its jobs hold and those held above
    the quota (borrowed)."""
    energy = GaugeMetricFamily("gogh_tenant_energy_kwh", "Energy the tenant's jobs drew this calendar month (UTC).",
                               labels=["tenant"])
    factor = GaugeMetricFamily("gogh_tenant_fair_share_factor",
                               "Fair-share factor, 0..1 (1: used nothing of its share; 0.5: exactly its share).",
                               labels=["tenant"])
    quota = GaugeMetricFamily("gogh_tenant_quota_gpus", "The tenant's nominal quota per GPU type.",
                              labels=["tenant", "gpu_type"])
    in_use = GaugeMetricFamily("gogh_tenant_gpus_in_use", "GPUs the tenant's placed or running jobs hold now.",
                               labels=["tenant", "gpu_type"])
    borrowed = GaugeMetricFamily("gogh_tenant_gpus_borrowed", "GPUs the tenant holds above its quota (others' idle "
                                 "quota, reclaimed when they need it).", labels=["tenant", "gpu_type"])
    for tenant in tenant_overviews(Tenant.objects.order_by("slug")):
        slug = tenant["slug"]
        energy.add_metric([slug], tenant["energy"]["month_kwh"])
        factor.add_metric([slug], tenant["fair_share"]["factor"])
        for row in tenant["quotas"]:
            quota.add_metric([slug, row["gpu_type"]], row["gpus"])
        for gpu_type, gpus in tenant["in_use"].items():
            in_use.add_metric([slug, gpu_type], gpus)
        for gpu_type, gpus in tenant["borrowed"].items():
            borrowed.add_metric([slug, gpu_type], gpus)
    yield from (energy, factor, quota, in_use, borrowed)
