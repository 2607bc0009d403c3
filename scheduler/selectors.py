"""Reads for the scheduler: what a user may see, the facts submission checks against, and
what the rounds need to know of jobs' past (observed rates, restart costs, preemptions)."""
from datetime import timedelta
from statistics import median

from django.db.models import Count, Max, QuerySet
from django.utils import timezone

from catalog.models import Workload
from telemetry.models import Gpu, GpuState

from .models import InterruptionKind, Job, JobInterruption, JobMeasurement, Tenant

#: Restart overheads a workload's figure is the median of: its latest measured ones, so it
#: follows a workload whose start-up changed (a bigger checkpoint, a new image).
RESTART_OVERHEAD_SAMPLES = 20


def tenant_of(user) -> Tenant | None:
    membership = getattr(user, "membership", None)
    return membership.tenant if membership is not None else None


def jobs_visible_to(user) -> QuerySet[Job]:
    """Staff see every job; everyone else only the jobs of their own tenant."""
    jobs = Job.objects.select_related("workload", "tenant", "owner")
    if user.is_staff:
        return jobs
    tenant = tenant_of(user)
    return jobs.filter(tenant=tenant) if tenant is not None else jobs.none()


def job_interruptions(job: Job) -> QuerySet[JobInterruption]:
    """The job's interruptions, newest first."""
    return JobInterruption.objects.filter(job=job).order_by("-at", "-id")


def cluster_gpu_count() -> int:
    """GPUs a job could ever be given: registered, reported by their agent, not disabled.
    Failed GPUs count: they come back when repaired."""
    return Gpu.objects.exclude(state__in=[GpuState.DISABLED, GpuState.MISSING]).count()


def largest_gpu_memory_gb() -> float | None:
    """Memory of the largest GPU type among the GPUs counted above; None with no GPUs."""
    gpus = Gpu.objects.exclude(state__in=[GpuState.DISABLED, GpuState.MISSING])
    return gpus.aggregate(largest=Max("gpu_type__memory_gb"))["largest"]


def observed_throughputs(job_ids) -> dict[int, float]:
    """{job id: the throughput its agent observed last} of the jobs of `job_ids` that yielded a
    measurement (their JobMeasurement links), in one query."""
    observed = {}
    for job_id, throughput in (
        JobMeasurement.objects.filter(job_id__in=job_ids)
        .order_by("measurement__observed_at", "measurement_id")
        .values_list("job_id", "measurement__throughput")
    ):
        observed[job_id] = throughput  # the newest wins
    return observed


def restart_overheads(workload_names) -> dict[str, float]:
    """{workload name: seconds a restart of its jobs costs} for the known workloads of
    `workload_names`: the median of the last RESTART_OVERHEAD_SAMPLES measured restarts of its
    jobs (JobInterruption.overhead_s), else the catalog's Workload.restart_overhead_s (a
    default until restarts are measured). One query per workload, plus one."""
    defaults = dict(Workload.objects.filter(name__in=set(workload_names)).values_list("name", "restart_overhead_s"))
    overheads = {}
    for name, default in defaults.items():
        measured = list(
            JobInterruption.objects.filter(job__workload__name=name, overhead_s__isnull=False)
            .order_by("-at", "-id").values_list("overhead_s", flat=True)[:RESTART_OVERHEAD_SAMPLES]
        )
        overheads[name] = median(measured) if measured else default
    return overheads


def preemptions_last_hour(job_ids, *, now=None) -> dict[int, int]:
    """{job id: times it was preempted in the hour before `now`} of `job_ids`, 0 for none, in
    one query: a job preempted max_preemptions_per_hour times is not preempted again."""
    since = (now or timezone.now()) - timedelta(hours=1)
    counts = dict.fromkeys(job_ids, 0)
    counts.update(
        JobInterruption.objects.filter(job_id__in=counts, kind=InterruptionKind.PREEMPTED, at__gt=since)
        .values("job_id").annotate(n=Count("id")).values_list("job_id", "n")
    )
    return counts


def moves_so_far(job_ids) -> dict[int, int]:
    """{job id: times a round has moved it} of `job_ids`, 0 for none, in one query: a job moved
    max_moves_per_job times is not moved again to save energy."""
    counts = dict.fromkeys(job_ids, 0)
    counts.update(
        JobInterruption.objects.filter(job_id__in=counts, kind=InterruptionKind.MOVED)
        .values("job_id").annotate(n=Count("id")).values_list("job_id", "n")
    )
    return counts
