"""The scheduler's live kinds (docs/live-updates.md): `job` (seen by its tenant and staff),
`solve_run` and `solver_config`; the windows that keep snapshots bounded (the newest ended jobs
and solve runs); and the tenancy rule of who sees what. For each kind: the dict that both the
snapshot and the events carry, the snapshot's part (settings.GOGH_LIVE_KINDS), and what
services call when objects change, inside their transaction.
"""
import threading
from contextlib import contextmanager
from functools import partial

from django.conf import settings
from django.db.models import Count, F, Q, Window
from django.db.models.functions import RowNumber
from django.db.models.signals import post_delete, post_save

from gogh_web.events.sending import Change, send_changes, send_event
from gogh_web.events.signals import recheck_user
from gogh_web.events.state import iso, number, plain
from gogh_web.events.windows import window_changes

from .lifecycle import TERMINAL
from .models import Allocation, Job, JobInterruption, Membership, SolveRun, SolverConfig
from .selectors import observed_throughputs, tenant_of
from .serving.live import replica_service_changes

ENDED_STATES = [s.value for s in TERMINAL]
MET, VIOLATED, UNKNOWN = "met", "violated", "unknown"
#: The SLO status of a probing job: a probe measures, it does not serve (no violation).
PROBING = "probe"
#: Fields of a SolveRun that pages show; the full decision stays in the admin and the API.
SOLVE_RUN_FIELDS = (
    "id", "trigger", "solver", "status", "dry_run", "shadow", "objective", "gap", "duration_s", "num_jobs", "num_gpus",
    "num_variables", "num_constraints", "fallback_reason", "power_w", "num_placed", "load", "energy_weight",
    "started_at", "finished_at",
)
#: How many of a job's newest interruptions its dict lists (all of them are counted).
INTERRUPTIONS_SHOWN = 5
#: What a job's dict shows of each interruption: the fields of GET /api/jobs/{id}/interruptions/.
INTERRUPTION_FIELDS = ("kind", "reason", "at", "steps_done", "resume_step", "steps_lost", "was_running")
#: The names of the windows' EventWindow rows.
ENDED_JOBS, SOLVE_RUNS = "ended_jobs", "solve_runs"

# --- Tenancy: a job's events are its tenant's (and staff's); every other kind is cluster-wide


def tenant_id_of(user) -> int | None:
    """The tenant whose events the user sees (settings.GOGH_LIVE_TENANT_OF); None: none."""
    tenant = tenant_of(user)
    return tenant.pk if tenant else None


def jobs_seen_by(viewer):
    """The jobs a viewer (gogh_web.events.selectors.Viewer) may see: staff all, others their tenant's."""
    jobs = Job.objects.all()
    if viewer.staff:
        return jobs
    return jobs.filter(tenant_id=viewer.tenant_id) if viewer.tenant_id else jobs.none()


def _membership_changed(sender, instance, **kwargs):
    recheck_user(instance.user_id)


def connect() -> None:
    """Called once by the app config's ready(): a user moved to another tenant (or out of one)
    has their live sockets check what they may see now."""
    post_save.connect(_membership_changed, sender=Membership, dispatch_uid="live-membership-saved")
    post_delete.connect(_membership_changed, sender=Membership, dispatch_uid="live-membership-deleted")


# --- State (pure: callers fetch the instances and their related rows)


def slo_status(min_throughput: float, observed: float | None) -> str:
    """Whether the job gets its T_min, by what telemetry observed; unknown until it observed something."""
    if observed is None:
        return UNKNOWN
    return MET if observed >= min_throughput else VIOLATED


def probe_state(job) -> dict | None:
    """A probing job's probe (docs/exploration.md), with the sentence the Jobs page's marker
    shows; None when it is not probing."""
    if not job.probe_gpu_type:
        return None
    until = job.probe_until.strftime("%H:%M UTC") if job.probe_until else "its end"
    return {
        "gpu_type": job.probe_gpu_type,
        "until": iso(job.probe_until),
        "probes": job.probes,
        "text": f"Probe {job.probes} on {job.probe_gpu_type} until {until}: a short low-priority run measuring "
        "a throughput the catalog predicts below T_min; not an SLO violation.",
    }


def placement_state(allocations, partner_job_ids=()) -> dict | None:
    """Where a job runs, from its open allocations (each with gpu, gpu.node, gpu.gpu_type) and
    the ids of the jobs sharing its GPUs (read by the caller in one query for all jobs); None if
    nowhere. Mixed GPU types (rare) are named together, sorted, joined by '+'."""
    if not allocations:
        return None
    allocations = sorted(allocations, key=lambda a: a.gpu_id)
    return {
        "gpu_type": "+".join(sorted({a.gpu.gpu_type.name for a in allocations})),
        "num_gpus": len(allocations),
        "partner_job_ids": sorted(set(partner_job_ids)),
        "nodes": sorted({a.gpu.node.hostname for a in allocations}),
        "gpu_ids": [a.gpu_id for a in allocations],
    }


def progress_state(job) -> dict:
    """Where the job is. `steps_done` is the most it ever reached (never decreases: pages show it
    as the best); `current_step` is where its current run is, counting from `resume_step` after a
    restart, and the fraction follows the current run, so a restarted job's bar shows the work
    it still has to redo."""
    total = job.total_steps
    return {
        "steps_done": job.steps_done,
        "current_step": job.current_step,
        "resume_step": job.resume_step,
        "total_steps": total,
        "fraction": min(1.0, job.current_step / total) if total else None,
        "checkpoint_step": job.checkpoint_step,
        "checkpoint_at": iso(job.checkpoint_at),
    }


def interruption_state(interruption) -> dict:
    return {field: plain(getattr(interruption, field)) for field in INTERRUPTION_FIELDS}


def interruptions_state(count: int, newest) -> dict:
    """The job's interruptions: how many, and the newest INTERRUPTIONS_SHOWN of them, newest first."""
    return {"count": count, "results": [interruption_state(i) for i in newest]}


def job_state(job, *, allocations, observed_throughput: float | None, partner_job_ids=(),
              interruptions: dict | None = None) -> dict:
    """A job (workload, tenant and owner loaded) with its open allocations, the ids of the jobs
    sharing its GPUs, the newest throughput telemetry observed for it and its interruptions
    (interruptions_state; none when not given)."""
    predicted = next((a.predicted_throughput for a in allocations if a.predicted_throughput is not None), None)
    observed = number(observed_throughput)
    return {
        "id": job.pk,
        "name": job.name,
        "workload": job.workload.name,
        "tenant": job.tenant.slug,
        "owner": job.owner.get_username(),
        "state": job.state,
        "state_reason": job.state_reason,
        "pending_reason": job.pending_reason,
        "priority": job.priority,
        "min_throughput": number(job.min_throughput),
        "max_gpus": job.max_gpus,
        "placement": placement_state(allocations, partner_job_ids),
        "predicted_throughput": number(predicted),
        "observed_throughput": observed,
        "slo": PROBING if job.probe_gpu_type or job.campaign_id else slo_status(job.min_throughput, observed),
        "submitted_at": iso(job.submitted_at),
        "placed_at": iso(job.placed_at),
        "started_at": iso(job.started_at),
        "finished_at": iso(job.finished_at),
        "deadline": iso(job.deadline),
        "progress": progress_state(job),
        "restarts": job.restarts,
        "steps_lost": job.steps_lost,
        "interruptions": interruptions or interruptions_state(0, []),
        "probe": probe_state(job),
    }


def solve_run_state(run) -> dict:
    return {field: plain(getattr(run, field, None)) for field in SOLVE_RUN_FIELDS}


def solver_config_state(config) -> dict:
    """Every setting of the singleton, whatever fields it grows; not its save time, so the unsaved
    defaults (before anything created the row) look exactly like the row created with them."""
    return {
        field.attname: plain(getattr(config, field.attname))
        for field in config._meta.concrete_fields
        if field.attname != "updated_at"
    }


# --- Windows: every active job plus the newest GOGH_LIVE_ENDED_JOBS_KEPT ended ones, and the
# newest GOGH_LIVE_SOLVE_RUNS_KEPT solve runs; whatever leaves one gets a delete event


def ended_jobs_kept() -> int:
    return settings.GOGH_LIVE_ENDED_JOBS_KEPT


def solve_runs_kept() -> int:
    return settings.GOGH_LIVE_SOLVE_RUNS_KEPT


def _ended_jobs():
    return Job.objects.filter(state__in=ENDED_STATES).order_by("-finished_at", "-id")


def newest_ended_job_ids(count: int) -> list[str]:
    """The `count` most recently ended jobs, newest first (the window is the first ended_jobs_kept())."""
    return [str(pk) for pk in _ended_jobs().values_list("pk", flat=True)[:count]]


def newest_solve_run_ids(count: int) -> list[str]:
    return [str(pk) for pk in SolveRun.objects.order_by("-id").values_list("pk", flat=True)[:count]]


def job_tenants(keys) -> dict[str, int]:
    """{job key: tenant id} of the jobs that still exist."""
    return {
        str(pk): tenant_id
        for pk, tenant_id in Job.objects.filter(pk__in=[int(k) for k in keys]).values_list("pk", "tenant_id")
    }


def jobs_in_window(jobs):
    """The jobs of `jobs` that snapshots hold: the active ones and the newest ended ones."""
    ended_kept = list(_ended_jobs().values_list("pk", flat=True)[: ended_jobs_kept()])
    return jobs.filter(Q(pk__in=ended_kept) | ~Q(state__in=ENDED_STATES))


def _solve_runs_in_window():
    return SolveRun.objects.order_by("-id")[: solve_runs_kept()]


def ended_jobs_changes(*, emitted) -> list[Change]:
    """Deletes (and upserts) for the ended jobs that left (entered) the window since pages were
    last told; `emitted`: keys whose events the same batch already carries."""
    kept = ended_jobs_kept()
    return window_changes(
        ENDED_JOBS, kind="job", members=newest_ended_job_ids(kept), unknown=lambda: newest_ended_job_ids(2 * kept + 1),
        emitted=emitted, data=jobs_data_by_key, tenants=job_tenants,
    )


def solve_runs_changes(*, emitted) -> list[Change]:
    """Like ended_jobs_changes, for the newest solve runs."""
    kept = solve_runs_kept()
    return window_changes(
        SOLVE_RUNS, kind="solve_run", members=newest_solve_run_ids(kept),
        unknown=lambda: newest_solve_run_ids(2 * kept + 1),
        emitted=emitted, data=solve_runs_data_by_key,
    )


# --- Current data (what the snapshot and the events carry; None: gone, or out of its window)


def jobs_data(jobs) -> dict[str, dict]:
    jobs = list(jobs.select_related("workload", "tenant", "owner"))
    allocations: dict[int, list] = {}
    open_allocations = Allocation.objects.filter(job__in=jobs, end__isnull=True)
    for allocation in open_allocations.select_related("gpu__node", "gpu__gpu_type"):
        allocations.setdefault(allocation.job_id, []).append(allocation)
    partners: dict[int, set[int]] = {}
    for job_id, partner_id in Allocation.partners.through.objects.filter(
        allocation__job__in=jobs, allocation__end__isnull=True
    ).values_list("allocation__job_id", "job_id"):
        partners.setdefault(job_id, set()).add(partner_id)
    observed = observed_throughputs([job.pk for job in jobs])
    interruptions = newest_interruptions(jobs)
    return {
        str(job.pk): job_state(
            job, allocations=allocations.get(job.pk, []), observed_throughput=observed.get(job.pk),
            partner_job_ids=partners.get(job.pk, ()), interruptions=interruptions.get(job.pk),
        )
        for job in jobs
    }


def newest_interruptions(jobs) -> dict[int, dict]:
    """{job id: interruptions_state} of the jobs that were interrupted, in one query however many
    jobs and interruptions there are: each row numbered and counted within its job's."""
    rows = (
        JobInterruption.objects.filter(job__in=jobs)
        .annotate(
            rank=Window(RowNumber(), partition_by=F("job_id"), order_by=[F("at").desc(), F("id").desc()]),
            total=Window(Count("id"), partition_by=F("job_id")),
        )
        .filter(rank__lte=INTERRUPTIONS_SHOWN)
        .order_by("job_id", "rank")
    )
    newest: dict[int, list] = {}
    counts: dict[int, int] = {}
    for row in rows:
        newest.setdefault(row.job_id, []).append(row)
        counts[row.job_id] = row.total
    return {job_id: interruptions_state(counts[job_id], shown) for job_id, shown in newest.items()}


def jobs_data_by_key(keys: list[str]) -> dict[str, dict]:
    """What the events of these jobs carry; a job gone or outside the window is left out (a delete)."""
    return jobs_data(jobs_in_window(Job.objects.filter(pk__in=[int(key) for key in keys])))


def solve_runs_data_by_key(keys: list[str]) -> dict[str, dict]:
    """What the events of these solve runs carry; one gone or outside the window is left out."""
    window = list(_solve_runs_in_window().values_list("pk", flat=True))
    runs = SolveRun.objects.filter(pk__in=[int(key) for key in keys]).filter(pk__in=window)
    return {str(run.pk): solve_run_state(run) for run in runs}


def solver_config() -> SolverConfig:
    """The settings row, or the defaults it will be created with: SolverConfig.load() creates it
    on first use, from any process, without a service (and so without an event)."""
    return SolverConfig.objects.filter(pk=SolverConfig.SINGLETON_PK).first() or SolverConfig(
        pk=SolverConfig.SINGLETON_PK
    )


def solver_config_data(config_id: int) -> dict | None:
    config = SolverConfig.objects.filter(pk=config_id).first()
    return solver_config_state(config) if config else None


# --- Snapshot parts (settings.GOGH_LIVE_KINDS)


def jobs_snapshot(viewer) -> dict[str, dict]:
    return jobs_data(jobs_in_window(jobs_seen_by(viewer)))


def solve_runs_snapshot(viewer) -> dict[str, dict]:
    return {str(run.pk): solve_run_state(run) for run in _solve_runs_in_window()}


def solver_config_snapshot(viewer) -> dict[str, dict]:
    return {str(SolverConfig.SINGLETON_PK): solver_config_state(solver_config())}


# --- Events: one batch per call, its data built after the commit, so it always shows the
# committed truth and an object that is gone (or left its window) becomes a delete


def job_changed(job) -> None:
    """A job changed (submitted, moved, placed, progressed, ended)."""
    _send_jobs({str(job.pk): job.tenant_id}, ended=job.is_terminal)


def jobs_changed(job_ids) -> None:
    """Jobs changed by a bulk update (their pending reasons after a round): one batch of events,
    built in one read and stored in one insert."""
    jobs = list(Job.objects.filter(pk__in=list(job_ids)).only("pk", "tenant_id", "state"))
    _send_jobs({str(job.pk): job.tenant_id for job in sorted(jobs, key=lambda j: j.pk)},
               ended=any(job.is_terminal for job in jobs))


_batch = threading.local()


@contextmanager
def jobs_batched():
    """The job events sent inside (by any service, in any number of transactions) sent as one
    batch when it ends, once what it committed is committed: a sync that moves a thousand jobs
    one transaction each builds their events in one read and stores them in one insert
    (one batch per job cost the executor sync 40 ms a job). Nested: the outermost one sends."""
    if getattr(_batch, "jobs", None) is not None:
        yield
        return
    _batch.jobs, _batch.ended = {}, False
    try:
        yield
    finally:
        tenants, ended = _batch.jobs, _batch.ended
        _batch.jobs = None
        _send_jobs(tenants, ended=ended)


def _send_jobs(tenants: dict[str, int], *, ended: bool) -> None:
    """When a job ended, the ended jobs its end pushed out of the window are deleted from pages:
    worked out after the commit, under the event lock (gogh_web/events/windows.py)."""
    if getattr(_batch, "jobs", None) is not None:
        _batch.jobs.update(tenants)
        _batch.ended = _batch.ended or ended
    elif tenants:
        send_changes(partial(_job_changes, tenants, ended))


def _job_changes(tenants: dict[str, int], ended: bool) -> list[Change]:
    data = jobs_data_by_key(list(tenants))
    changes = [Change("job", key, data.get(key), tenant_id) for key, tenant_id in tenants.items()]
    changes += replica_service_changes(list(tenants))  # a replica's service shows its state and GPUs
    return changes + (ended_jobs_changes(emitted=tenants) if ended else [])


def solve_run_changed(run) -> None:
    """A new solve run; the oldest ones of the window leave it."""
    send_changes(partial(_solve_run_changes, str(run.pk)))


def _solve_run_changes(key: str) -> list[Change]:
    data = solve_runs_data_by_key([key]).get(key)
    return [Change("solve_run", key, data, None), *solve_runs_changes(emitted=[key])]


def solver_config_changed(config) -> None:
    send_event(kind="solver_config", key=config.pk, data=partial(solver_config_data, config.pk))
