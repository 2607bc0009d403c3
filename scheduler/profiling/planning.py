"""Campaign jobs in a round's problem: probes on their campaign's GPU type (docs/profiling.md)."""
from dataclasses import replace

from ..models import Job
from ..optimizer import JobSpec


def campaign_gpu_types(job_ids) -> dict[int, str]:
    """{job id: the GPU type its campaign measures} of the campaign jobs among `job_ids`."""
    return dict(
        Job.objects.filter(pk__in=list(job_ids), campaign__isnull=False).values_list("pk", "campaign__gpu_type__name")
    )


def as_probes(specs: tuple[JobSpec, ...]) -> tuple[JobSpec, ...]:
    """Campaign jobs become probes (JobSpec.probe): only on their campaign's type, after every
    user's job, alone on their GPUs, and preempted by any user's job that needs the GPUs."""
    types = campaign_gpu_types(int(spec.id) for spec in specs)
    return tuple(
        replace(spec, probe=True, only_gpu_type=types[int(spec.id)]) if int(spec.id) in types else spec
        for spec in specs
    )
