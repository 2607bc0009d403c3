"""What services call when they change state: one helper per kind, each one batch of events
whose data is built after the commit (selectors.py), so it always shows the committed truth and
an object that is gone (or left its window) becomes a delete.

Only services call these (scheduler, telemetry and catalog services); views, tasks and the
admin change state through services, so they emit through them.
"""
from functools import partial

from scheduler.models import Job

from . import selectors, windows
from .sending import Change, send_changes, send_event, send_events_merged


def job_changed(job) -> None:
    """A job changed (submitted, moved, placed, progressed, ended)."""
    _send_jobs({str(job.pk): job.tenant_id}, ended=job.is_terminal)


def jobs_changed(job_ids) -> None:
    """Jobs changed by a bulk update (their pending reasons after a round): one batch of events,
    built in one read and stored in one insert."""
    jobs = list(Job.objects.filter(pk__in=list(job_ids)).only("pk", "tenant_id", "state"))
    _send_jobs({str(job.pk): job.tenant_id for job in sorted(jobs, key=lambda j: j.pk)},
               ended=any(job.is_terminal for job in jobs))


def _send_jobs(tenants: dict[str, int], *, ended: bool) -> None:
    """When a job ended, the ended jobs its end pushed out of the window are deleted from pages:
    worked out after the commit, under the event lock (windows.py)."""
    if tenants:
        send_changes(partial(_job_changes, tenants, ended))


def _job_changes(tenants: dict[str, int], ended: bool) -> list[Change]:
    data = selectors.jobs_data_by_key(list(tenants))
    changes = [Change("job", key, data.get(key), tenant_id) for key, tenant_id in tenants.items()]
    return changes + (windows.ended_jobs_changes(emitted=tenants) if ended else [])


def node_changed(node_id: int) -> None:
    send_event(kind="node", key=node_id, data=partial(selectors.node_data, node_id))


def gpus_changed(gpu_ids) -> None:
    """GPUs whose state or newest sample changed: an event of each GPU after the call (per sample
    batch), all built and stored together and merged with the GPU events of the process's
    concurrent uploads (sending.send_events_merged): one locked transaction per turn, not one
    per upload, and one event per GPU per turn however many uploads named it."""
    send_events_merged(kind="gpu", keys=gpu_ids, data=selectors.gpus_data_by_key)


def solve_run_changed(run) -> None:
    """A new solve run; the oldest ones of the window leave it (windows.py)."""
    send_changes(partial(_solve_run_changes, str(run.pk)))


def _solve_run_changes(key: str) -> list[Change]:
    data = selectors.solve_runs_data_by_key([key]).get(key)
    return [Change("solve_run", key, data, None), *windows.solve_runs_changes(emitted=[key])]


def solver_config_changed(config) -> None:
    send_event(kind="solver_config", key=config.pk, data=partial(selectors.solver_config_data, config.pk))


def predictor_versions_changed(version_ids) -> None:
    for version_id in sorted(set(version_ids)):
        send_event(kind="predictor_version", key=version_id, data=partial(selectors.predictor_version_data, version_id))
