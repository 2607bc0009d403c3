"""Reads of the live stream: who sees what, the snapshot, one object's current data (what an
event carries), and the events after an id.

Windows keep the snapshot bounded and still equal to the events: every active job plus the
newest GOGH_LIVE_ENDED_JOBS_KEPT ended jobs, and the newest GOGH_LIVE_SOLVE_RUNS_KEPT solve runs. Whatever leaves
a window gets a delete event (see emit.py), so applying events keeps a page inside the same window.
"""
from dataclasses import dataclass
from importlib import import_module
from types import SimpleNamespace

from django.conf import settings
from django.contrib import auth
from django.db.models import OuterRef, Q, Subquery

from catalog.models import Measurement, MeasurementSource, PredictorVersion
from scheduler.lifecycle import TERMINAL
from scheduler.models import Allocation, Job, SolveRun, SolverConfig
from scheduler.selectors import tenant_of
from telemetry.models import Gpu, GpuSample, GpuState, Node

from . import state
from .models import Event

ENDED_STATES = [s.value for s in TERMINAL]


@dataclass(frozen=True)
class Viewer:
    """What a signed-in user may see of the stream: staff everything, others their tenant's jobs
    and the cluster-wide kinds. Sockets compare it on every wake with the session's user now."""

    staff: bool
    tenant_id: int | None

    def events(self):
        events = Event.objects.all()
        if self.staff:
            return events
        cluster_wide = Q(tenant__isnull=True)
        return events.filter(cluster_wide | Q(tenant_id=self.tenant_id) if self.tenant_id else cluster_wide)

    def jobs(self):
        jobs = Job.objects.all()
        if self.staff:
            return jobs
        return jobs.filter(tenant_id=self.tenant_id) if self.tenant_id else jobs.none()


def viewer_for(user) -> Viewer:
    tenant = tenant_of(user)
    return Viewer(staff=bool(user.is_staff), tenant_id=tenant.pk if tenant else None)


def session_viewer(session_key: str | None) -> Viewer | None:
    """What the user signed in to this session may see now; None when the session no longer
    signs anyone in (logged out, expired, password changed, user deactivated or deleted).
    Sockets ask on every wake: access is not fixed when they open."""
    if not session_key:
        return None
    session = import_module(settings.SESSION_ENGINE).SessionStore(session_key)
    user = auth.get_user(SimpleNamespace(session=session))  # what a request with that cookie gets
    return viewer_for(user) if user.is_authenticated else None


# --- Events


def newest_event_id() -> int:
    return Event.objects.order_by("-id").values_list("id", flat=True).first() or 0


def oldest_event_id() -> int | None:
    return Event.objects.order_by("id").values_list("id", flat=True).first()


def needs_resync(after: int) -> bool:
    """True when the events after `after` are no longer all kept (pruned), or `after` is from
    another database (ahead of the newest): the client must start again from a snapshot."""
    oldest = oldest_event_id()
    if oldest is None:
        return after > 0 and after > newest_event_id()
    return after < oldest - 1 or after > newest_event_id()


def events_after(viewer: Viewer, after: int, *, limit: int = 500) -> list[dict]:
    return [event.as_message() for event in viewer.events().filter(id__gt=after).order_by("id")[:limit]]


# --- Windows


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


# --- Current data of objects (what events carry; None: gone, or out of its window)


def jobs_data(jobs) -> dict[str, dict]:
    # Imported here: telemetry's services import the scheduler's, which emit events through this app.
    from telemetry.services.job_progress import measurement_reference

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
    observed = {}
    references = {measurement_reference(job.pk): job.pk for job in jobs}
    rows = Measurement.objects.filter(source=MeasurementSource.TELEMETRY, reference__in=references).order_by(
        "observed_at", "id"
    )
    for reference, throughput in rows.values_list("reference", "throughput"):
        observed[references[reference]] = throughput  # the newest wins
    return {
        str(job.pk): state.job_state(
            job, allocations=allocations.get(job.pk, []), observed_throughput=observed.get(job.pk),
            partner_job_ids=partners.get(job.pk, ()),
        )
        for job in jobs
    }


def jobs_data_by_key(keys: list[str]) -> dict[str, dict]:
    """What the events of these jobs carry; a job gone or outside the window is left out (a delete)."""
    return jobs_data(jobs_in_window(Job.objects.filter(pk__in=[int(key) for key in keys])))


def nodes_data(nodes) -> dict[str, dict]:
    counts: dict[int, int] = {}
    for node_id in Gpu.objects.filter(node__in=nodes).exclude(state=GpuState.MISSING).values_list("node_id", flat=True):
        counts[node_id] = counts.get(node_id, 0) + 1
    return {str(node.pk): state.node_state(node, gpu_count=counts.get(node.pk, 0)) for node in nodes}


def node_data(node_id: int) -> dict | None:
    return nodes_data(Node.objects.filter(pk=node_id)).get(str(node_id))


def gpus_data(gpus) -> dict[str, dict]:
    newest = GpuSample.objects.filter(gpu=OuterRef("pk")).order_by("-ts").values("pk")[:1]
    gpus = list(gpus.select_related("node", "gpu_type").annotate(newest_sample=Subquery(newest)))
    samples = GpuSample.objects.in_bulk([gpu.newest_sample for gpu in gpus if gpu.newest_sample])
    return {str(gpu.pk): state.gpu_state(gpu, sample=samples.get(gpu.newest_sample)) for gpu in gpus}


def gpus_data_by_key(keys: list[str]) -> dict[str, dict]:
    return gpus_data(Gpu.objects.filter(pk__in=[int(key) for key in keys]))


def _solve_runs_in_window():
    return SolveRun.objects.order_by("-id")[: solve_runs_kept()]


def solve_runs_data_by_key(keys: list[str]) -> dict[str, dict]:
    """What the events of these solve runs carry; one gone or outside the window is left out."""
    window = list(_solve_runs_in_window().values_list("pk", flat=True))
    runs = SolveRun.objects.filter(pk__in=[int(key) for key in keys]).filter(pk__in=window)
    return {str(run.pk): state.solve_run_state(run) for run in runs}


def solver_config() -> SolverConfig:
    """The settings row, or the defaults it will be created with: SolverConfig.load() creates it
    on first use, from any process, without a service (and so without an event)."""
    return SolverConfig.objects.filter(pk=SolverConfig.SINGLETON_PK).first() or SolverConfig(
        pk=SolverConfig.SINGLETON_PK
    )


def solver_config_data(config_id: int) -> dict | None:
    config = SolverConfig.objects.filter(pk=config_id).first()
    return state.solver_config_state(config) if config else None


def predictor_version_data(version_id: int) -> dict | None:
    version = PredictorVersion.objects.filter(pk=version_id).first()
    return state.predictor_version_state(version) if version else None


# --- Snapshot


def snapshot(viewer: Viewer) -> dict:
    """{"event_id": N, "state": {kind: {key: data}}}: what the viewer may see now, and the id of
    the newest event it already reflects. The id is read first: an event committed while the
    state is read is sent again after it, and applying it again changes nothing."""
    event_id = newest_event_id()
    return {
        "event_id": event_id,
        "state": {
            "job": jobs_data(jobs_in_window(viewer.jobs())),
            "node": nodes_data(Node.objects.all()),
            "gpu": gpus_data(Gpu.objects.all()),
            "solve_run": {str(run.pk): state.solve_run_state(run) for run in _solve_runs_in_window()},
            "solver_config": {str(SolverConfig.SINGLETON_PK): state.solver_config_state(solver_config())},
            "predictor_version": {str(v.pk): state.predictor_version_state(v) for v in PredictorVersion.objects.all()},
        },
    }
