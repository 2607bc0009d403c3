"""What services call when they change state: one helper per kind, each a send_event (send_events
for a batch of GPUs) whose data is built after the commit (selectors.py), so it always shows the
committed truth and an object that is gone (or left its window) becomes a delete.

Only services call these (scheduler, telemetry and catalog services); views, tasks and the
admin change state through services, so they emit through them.
"""
from functools import partial

from scheduler.models import Job

from . import selectors
from .sending import send_event, send_events


def job_changed(job) -> None:
    """A job changed (submitted, moved, placed, progressed). When it ended, the ended job that its
    end pushed out of the snapshot's window is deleted from pages."""
    send_event(kind="job", key=job.pk, data=partial(selectors.job_data, job.pk), tenant_id=job.tenant_id)
    if job.is_terminal:
        leaving = selectors.ended_job_leaving_window()
        if leaving is not None:
            send_event(kind="job", key=leaving[0], data=partial(selectors.job_data, leaving[0]), tenant_id=leaving[1])


def jobs_changed(job_ids) -> None:
    """Jobs changed by a bulk update (their pending reasons after a round)."""
    for job in Job.objects.filter(pk__in=list(job_ids)).only("pk", "tenant_id", "state"):
        job_changed(job)


def node_changed(node_id: int) -> None:
    send_event(kind="node", key=node_id, data=partial(selectors.node_data, node_id))


def gpus_changed(gpu_ids) -> None:
    """GPUs whose state or newest sample changed: one event per GPU per call (per sample batch),
    all built and stored together."""
    send_events(kind="gpu", keys=sorted(set(gpu_ids)), data=selectors.gpus_data_by_key)


def solve_run_changed(run) -> None:
    """A new solve run; the oldest one of the window leaves it."""
    send_event(kind="solve_run", key=run.pk, data=partial(selectors.solve_run_data, run.pk))
    leaving = selectors.solve_run_leaving_window()
    if leaving is not None:
        send_event(kind="solve_run", key=leaving, data=partial(selectors.solve_run_data, leaving))


def solver_config_changed(config) -> None:
    send_event(kind="solver_config", key=config.pk, data=partial(selectors.solver_config_data, config.pk))


def predictor_versions_changed(version_ids) -> None:
    for version_id in sorted(set(version_ids)):
        send_event(kind="predictor_version", key=version_id, data=partial(selectors.predictor_version_data, version_id))
