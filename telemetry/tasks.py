"""Celery tasks of the telemetry app: one more way in to its services, nothing else."""
from celery import shared_task
from django.conf import settings

from . import services


@shared_task(name="telemetry.tasks.nodes_mark_silent_down")
def nodes_mark_silent_down() -> int:
    """Run by Celery beat (settings.CELERY_BEAT_SCHEDULE): how many nodes went down."""
    return services.nodes_mark_silent_down(timeout_s=settings.GOGH_NODE_HEARTBEAT_TIMEOUT_S)


@shared_task(name="telemetry.tasks.gpu_samples_downsample")
def gpu_samples_downsample() -> int:
    """Run by Celery beat: fold raw samples past the retention into per-minute aggregates, then
    prune the aggregates past theirs; how many raw samples were folded."""
    folded = services.gpu_samples_downsample(retention_s=settings.GOGH_TELEMETRY_RAW_RETENTION_S)
    services.gpu_sample_minutes_prune(retention_s=settings.GOGH_TELEMETRY_MINUTE_RETENTION_S)
    return folded


@shared_task(name="telemetry.tasks.gpu_power_curves_refit")
def gpu_power_curves_refit() -> dict:
    """Run by Celery beat every GOGH_POWER_CURVE_REFIT_S: each GPU's curve refitted from its
    samples of the last GOGH_POWER_CURVE_WINDOW_S; how many were fitted and refused."""
    return services.gpu_power_curves_refit(window_s=settings.GOGH_POWER_CURVE_WINDOW_S)
