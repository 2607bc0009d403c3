"""Jobs placed on GPUs for the telemetry tests, as the scheduler would leave them."""
from django.utils import timezone

from scheduler.models import Allocation
from scheduler.services import job_submit, job_transition


def placed_job(owner, workload, gpus, *, command="train.sh", total_steps=None, min_throughput=5.0, predicted=None):
    """A job placed on `gpus` (one open allocation each)."""
    job = job_submit(owner=owner, workload=workload, min_throughput=min_throughput, max_gpus=len(gpus),
                     command=command, environment={"EPOCHS": "3"}, total_steps=total_steps).job
    job = job_transition(job=job, to="placed")
    for gpu in gpus:
        Allocation.objects.create(job=job, gpu=gpu, start=timezone.now(), predicted_throughput=predicted)
    return job
