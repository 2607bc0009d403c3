"""Celery tasks of the scheduler app: one more way in to its services, nothing else."""
from celery import shared_task

from . import services
from .accounting.services import accounting_pass as account
from .dispatch.executor_sync import executor_sync as sync
from .gpu_speed_learning import gpu_speeds_refresh as speeds_refresh
from .models import SolveTrigger


@shared_task(name="scheduler.tasks.scheduling_round")
def scheduling_round(trigger: str = SolveTrigger.PERIODIC) -> int:
    """Run by Celery beat (settings.CELERY_BEAT_SCHEDULE) and on demand: the SolveRun's id.
    Starting releases the pending round request, so one made from now on is sent again."""
    services.scheduling_round_started()
    return services.scheduling_round_run(trigger=trigger).solve_run.pk


@shared_task(name="scheduler.tasks.solve_cell")
def solve_cell(problem: dict) -> dict:
    """One cell of the `cells` solver (scheduler.cell_runner sends a group of these)."""
    return services.cell_solve(problem=problem)


@shared_task(name="scheduler.tasks.job_predict")
def job_predict(job_id: int) -> int | None:
    """Sent when a job is submitted (and by predictions_reconcile): P1's estimates for it; the
    PredictionRecord's id or None."""
    record = services.job_predict_by_id(job_id=job_id)
    return record.pk if record else None


@shared_task(name="scheduler.tasks.predictions_reconcile")
def predictions_reconcile() -> int:
    """Run by Celery beat every GOGH_PREDICTIONS_RECONCILE_S: P1 for jobs that lack it; how many were asked for."""
    return services.predictions_reconcile()


@shared_task(name="scheduler.tasks.executor_sync")
def executor_sync() -> int | None:
    """Run by Celery beat every GOGH_SLURM["sync_s"] when GOGH_EXECUTOR=slurm, and asked for
    after a round's decision and a cancel (services.executor_sync_request): the ExecutorSync's
    id, or None when GOGH's own agents run the jobs (nothing to push)."""
    record = sync()
    return record.pk if record else None


@shared_task(name="scheduler.tasks.accounting_pass")
def accounting_pass() -> int:
    """Run by Celery beat every GOGH_ACCOUNTING_EVERY_S: count the allocations' energy and
    GPU-hours since the last pass, refresh the tenants' fair-share factors; how many allocations
    it counted."""
    return account().allocations


@shared_task(name="scheduler.tasks.gpu_speeds_refresh")
def gpu_speeds_refresh() -> int:
    """Run by Celery beat every GOGH_GPU_SPEED_REFRESH_S: each GPU's speed relearnt from its jobs'
    measurements (docs/gpu_health.md); how many GPU rows changed."""
    return speeds_refresh()
