"""Reads for the scheduler: what a user may see, and the facts submission checks against."""
from django.db.models import Max, QuerySet

from telemetry.models import Gpu, GpuState

from .models import Job, JobMeasurement, Tenant


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
