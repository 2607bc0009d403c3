"""Reads behind the dashboard pages, scoped to what the user may see (their tenant's jobs;
staff see all). Cluster-wide facts (nodes, GPUs, power, predictors, solver rounds) are shown
to every signed-in user, as the live layer's cluster-wide events are. Jobs, nodes, GPUs and
solve runs are read through the readers and windows of the live kinds (scheduler/live.py,
telemetry/live.py), so a server-rendered page equals the snapshot its script starts
from and the events it then applies."""
from collections import defaultdict
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import F, FloatField, Func, Max, Sum, Value, Window
from django.db.models.functions import Greatest, Lead, Least
from django.utils import timezone

from catalog.models import GpuType, Measurement, PredictionRecord, PredictorVersion, Workload
from scheduler.lifecycle import JobState
from scheduler.live import jobs_data, jobs_in_window, solve_run_state, solve_runs_kept
from scheduler.models import SolveRun, SolverConfig, SolverConfigChange
from scheduler.optimizer.serialization import problem_from_dict
from scheduler.predictions import WorkloadEstimates
from scheduler.problem_source import ACTIVE_STATES
from scheduler.profiling.live import gpu_type_profiles_snapshot, profile_label
from scheduler.selectors import jobs_visible_to
from telemetry.live import gpus_data, nodes_data
from telemetry.models import Gpu, GpuPowerCurve, GpuSample, GpuSampleMinute, GpuState, Node, NodeManager, NodeState

from . import tradeoff
from .models import TradeoffSweep

#: SolverConfig fields the Trade-off page previews and applies.
TRADEOFF_FIELDS = ("base_energy_weight", "adaptive_weight", "load_window", "throughput_value_w")


# --- Cluster
def stale_after_s() -> float:
    """A GPU sample older than this no longer counts as "now" (the /metrics rule)."""
    return settings.GOGH_TELEMETRY_METRICS_STALE_S


def power_now_w(gpus: list[dict], *, now: datetime) -> float:
    """Sum of each GPU's newest power reading, if fresher than the staleness bound (live.js's
    GPU dicts; cluster.js applies the same rule to the live ones)."""
    limit = timedelta(seconds=stale_after_s())
    return sum(
        g["power_w"] for g in gpus
        if g["power_w"] is not None and g["sampled_at"] and now - datetime.fromisoformat(g["sampled_at"]) <= limit
    )


def cluster_overview(*, now=None) -> dict:
    """Nodes and GPUs as the live snapshot holds them (a node's GPU count leaves out MISSING
    GPUs, as the live one does), GPUs counted by type and state with how the catalog knows each
    type (profiled, profiling k of n cases, ...: scheduler.profiling.live), power now and energy
    today. `node_rows` are the nodes as the page's table shows them: who manages each (its
    agent, or Slurm) and the GPUs a run GOGH did not submit holds (cluster.js does the same)."""
    now = now or timezone.now()
    gpus = sorted(gpus_data(Gpu.objects.all()).values(), key=lambda g: (g["node"], g["index"]))
    nodes = sorted(nodes_data(Node.objects.all()).values(), key=lambda n: n["hostname"])
    by_type: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    held = held_gpus(gpus)
    for gpu in gpus:
        by_type[gpu["gpu_type"]][gpu["state"]] += 1
    profiles = gpu_type_profiles_snapshot(None)
    return {
        "nodes": nodes,
        "node_rows": [
            {**node, "managed_by_label": NodeManager(node["managed_by"]).label, "held": held.get(node["id"], [])}
            for node in nodes
        ],
        "nodes_down": sum(n["state"] == NodeState.DOWN for n in nodes),
        "profiles": profiles,
        "gpu_type_rows": [
            {"gpu_type": t, "states": dict(states), "profile": profile_label(profiles[t]) if t in profiles else "",
             "held": sum(g["gpu_type"] == t for node_held in held.values() for g in node_held)}
            for t, states in sorted(by_type.items())
        ],
        "gpus": gpus,
        "board_rows": [g for g in gpus if g["state"] != GpuState.MISSING],
        "power_curves": power_curves(),
        "gpus_by_type": {t: dict(states) for t, states in sorted(by_type.items())},
        "power_now_w": power_now_w(gpus, now=now),
        "energy_today_wh": energy_today_wh(now=now),
        "stale_s": stale_after_s(),
    }


def power_curves() -> list[dict]:
    """Each fitted board curve beside its type's datasheet curve (docs/gpu_health.md), for the
    Cluster page's chart. Server-rendered only: curves are refitted hourly, not per sample."""
    rows = GpuPowerCurve.objects.select_related("gpu__node", "gpu__gpu_type").order_by("gpu__node__hostname",
                                                                                      "gpu__index")
    return [
        {
            "gpu_id": curve.gpu_id, "label": f"{curve.gpu.node.hostname}/{curve.gpu.index}",
            "gpu_type": curve.gpu.gpu_type.name, "points": curve.points, "residual_std_w": curve.residual_std_w,
            "samples": curve.samples, "power_limit_w": curve.power_limit_w,
            "datasheet": curve.gpu.gpu_type.power_curve
            or [[0.0, curve.gpu.gpu_type.idle_w], [1.0, curve.gpu.gpu_type.tdp_w]],
        }
        for curve in rows
    ]


def held_gpus(gpus: list[dict]) -> dict[int, list[dict]]:
    """{node id: its GPUs (live dicts, not missing) that a run GOGH did not submit holds}: GOGH
    plans nothing on them (telemetry's Gpu.external_holder, set from Slurm's foreign jobs)."""
    held: dict[int, list[dict]] = defaultdict(list)
    for gpu in gpus:
        if gpu["external_holder"] and gpu["state"] != GpuState.MISSING:
            held[gpu["node_id"]].append(gpu)
    return dict(held)


def energy_today_wh(*, now=None) -> float:
    """Energy drawn since midnight UTC, summed over GPUs. Raw samples are integrated over their
    real timestamps: each reading holds until the next one (or now), for at most the staleness
    bound, so an outage adds nothing and the agent's sampling interval does not matter. A
    per-minute aggregate keeps no timestamps: its mean power counts for min(60 s, its samples
    x 1 s), 1 s being the agents' slowest interval (a fuller minute cannot be longer).

    The raw part is one SQL sum over a window (LEAD: each sample's next one of the same GPU):
    a day keeps up to 86,400 samples per GPU, and reading them into Python made the Cluster page
    take seconds by evening."""
    now = now or timezone.now()
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    cap = stale_after_s()
    held_s = Seconds(F("until"), F("ts"))
    raw = (
        GpuSample.objects.filter(ts__gte=midnight, ts__lte=now, power_w__isnull=False)
        .order_by()
        .annotate(until=Window(Lead("ts", default=Value(now)), partition_by=[F("gpu_id")], order_by=F("ts").asc()))
        .aggregate(joules=Sum(F("power_w") * Least(Greatest(held_s, Value(0.0)), Value(float(cap)))))
    )
    joules = raw["joules"] or 0.0
    minutes = GpuSampleMinute.objects.filter(minute__gte=midnight, power_w_mean__isnull=False)
    for mean, count in minutes.values_list("power_w_mean", "samples"):
        joules += mean * min(60.0, float(count))
    return joules / 3600.0


class Seconds(Func):
    """Seconds from the second datetime to the first, as a float, in the database's own
    arithmetic (SQLite's julian days; Django's timestamp difference there is a Python function
    called per row, which made the sum several times slower)."""

    arity = 2
    output_field = FloatField()

    def as_sqlite(self, compiler, connection, **extra):
        template = "(julianday(%(expressions)s) - julianday(%(start)s)) * 86400.0"
        end, start = (compiler.compile(e) for e in self.get_source_expressions())
        return template % {"expressions": end[0], "start": start[0]}, [*end[1], *start[1]]

    def as_postgresql(self, compiler, connection, **extra):
        end, start = (compiler.compile(e) for e in self.get_source_expressions())
        return f"EXTRACT(EPOCH FROM ({end[0]} - {start[0]}))::float", [*end[1], *start[1]]


# --- Jobs
def job_rows(user) -> list[dict]:
    """The jobs the live snapshot holds for the user (its window: active ones and the cluster's
    most recently ended ones), as the same dicts. Active first (by priority, then age), then
    ended ones, newest first: the order jobs.js keeps."""
    rows = list(jobs_data(jobs_in_window(jobs_visible_to(user))).values())
    active = sorted((r for r in rows if r["state"] in ACTIVE_STATES), key=lambda r: (-r["priority"], r["id"]))
    return active + sorted((r for r in rows if r["state"] not in ACTIVE_STATES), key=lambda r: -r["id"])


# --- Predictions
def predictor_versions() -> list[PredictorVersion]:
    return list(PredictorVersion.objects.order_by("-created_at", "-id")[:100])


def validation_mae_series() -> dict[str, list[tuple[str, float]]]:
    """Per predictor (P1, P2): (created_at, val_mae) of each version, oldest first."""
    series: dict[str, list] = defaultdict(list)
    for version in PredictorVersion.objects.order_by("created_at", "id"):
        if version.val_mae is not None:
            series[version.name].append((version.created_at.isoformat(), version.val_mae))
    return dict(series)


def live_prediction_errors(user) -> list[dict]:
    """Running jobs the user may see: predicted vs observed throughput and the relative error,
    with the confidence of their workload's newest estimate ("catalog" when the numbers came
    from measurements alone)."""
    jobs = jobs_data(jobs_visible_to(user).filter(state=JobState.RUNNING.value)).values()
    low_confidence = _low_confidence({j["workload"] for j in jobs})
    rows = []
    for job in sorted(jobs, key=lambda j: j["id"]):
        p, o = job["predicted_throughput"], job["observed_throughput"]
        confidence = low_confidence.get(job["workload"])
        rows.append({
            "id": job["id"], "workload": job["workload"], "predicted": p, "observed": o,
            "error": (o - p) / p if p and o is not None else None,
            "confidence": "catalog" if confidence is None else "low" if confidence else "normal",
        })
    return rows


def _low_confidence(workloads: set[str]) -> dict[str, bool]:
    newest = (
        PredictionRecord.objects.filter(workload__name__in=workloads, shadow=False)
        .values("workload_id").annotate(newest=Max("id")).values("newest")
    )
    return {
        name: bool(estimates.get("low_confidence"))
        for name, estimates in PredictionRecord.objects.filter(pk__in=newest).values_list("workload__name", "estimates")
    }


MEASURED, PREDICTED, UNKNOWN = 2, 1, 0


def catalog_coverage() -> dict:
    """Per GPU type, a workload x partner grid (first column: alone) of 2 = measured,
    1 = predicted by a stored P1/P2 estimate, 0 = unknown. Single-GPU configurations.

    `types` lists the GPU types the cluster has (a GPU not missing) first, so the page opens on
    one of them: the catalog also covers types no node here has, which a reader of this
    cluster's coverage rarely wants first. `in_cluster` names those types."""
    workloads = list(Workload.objects.order_by("name").values_list("name", flat=True))
    catalog_types = list(GpuType.objects.order_by("name").values_list("name", flat=True))
    here = set(Gpu.objects.exclude(state=GpuState.MISSING).values_list("gpu_type__name", flat=True).distinct())
    types = [t for t in catalog_types if t in here] + [t for t in catalog_types if t not in here]
    measured = set(
        Measurement.objects.filter(num_gpus=1, throughput__gt=0)
        .values_list("workload__name", "gpu_type__name", "partner__name")
        .distinct()
    )
    predicted: set[tuple[str, str, str | None]] = set()
    newest = (
        PredictionRecord.objects.filter(shadow=False).values("workload_id").annotate(newest=Max("id")).values("newest")
    )
    for name, record in PredictionRecord.objects.filter(pk__in=newest).values_list("workload__name", "estimates"):
        estimates = WorkloadEstimates.from_record(record)
        predicted.update((name, gpu_type, partner) for (partner, gpu_type) in estimates.rho)
        predicted.update(
            (name, gpu_type, None) for (gpu_type, num_gpus, _), tau in estimates.tau.items() if num_gpus == 1 and tau
        )
    columns = [None, *workloads]

    def cell(w, t, p):
        return MEASURED if (w, t, p) in measured else PREDICTED if (w, t, p) in predicted else UNKNOWN

    return {
        "workloads": workloads,
        "partners": ["(alone)", *workloads],
        "types": types,
        "in_cluster": [t for t in types if t in here],
        "by_type": {t: [[cell(w, t, p) for p in columns] for w in workloads] for t in types},
    }


# --- Solver
def recent_solve_runs() -> list[dict]:
    """The solve runs a live snapshot holds (the newest GOGH_LIVE_SOLVE_RUNS_KEPT by id), as its
    dicts, newest first: solver.js keeps the same window and order."""
    return [solve_run_state(run) for run in SolveRun.objects.order_by("-id")[: solve_runs_kept()]]


def solver_config() -> SolverConfig:
    return SolverConfig.load()


def solver_config_changes() -> list[SolverConfigChange]:
    return list(SolverConfigChange.objects.select_related("changed_by")[:20])


# --- Trade-off
#: TradeoffPoint.status of a point whose solve raised (services.tradeoff_point_solve).
FAILED_POINT = "failed"


def sweep_status(sweep: TradeoffSweep, *, now=None, statuses: list[str] | None = None) -> str:
    """tradeoff.SOLVING, COMPLETE or FAILED (a point failed, or the sweep's time ran out with
    points missing), by its stored points (`statuses`: those of points already read, so that a
    status and the points shown with it come from one read), its age and its problem's solver
    time limit."""
    if statuses is None:
        statuses = list(sweep.points.values_list("status", flat=True))
    failed = statuses.count(FAILED_POINT)
    return tradeoff.sweep_status(
        expected=sweep.points_expected, solved=len(statuses) - failed, failed=failed,
        age_s=((now or timezone.now()) - sweep.created_at).total_seconds(),
        timeout_s=tradeoff.sweep_timeout_s(sweep.points_expected, sweep.problem["settings"]["time_limit_s"]),
    )


def sweep_data(sweep: TradeoffSweep, user) -> dict:
    """What the Trade-off page shows of a sweep: its solved points (failed ones counted), its
    status, where the cluster runs now, and the stored settings (the form starts from them;
    the sweep's own surplus value is reported apart, as the sweep's assumption). Settings that
    give the same decision draw one marker: `distinct_points` counts the markers and each
    point's `shared_by` the points at its operating point (itself included). `current` is the
    sweep's state (its jobs' GPUs now) priced by the sweep's own predictions, like its points;
    `tenants` counts the tenants with active jobs (with fewer than two, Jain's index is 1 at
    every point and the page draws throughput x power alone)."""
    points = list(sweep.points.order_by("index").values(
        "index", "energy_weight", "fairness_weight", "throughput", "power_w", "jain", "placed", "status", "seconds"))
    solved = [p for p in points if p["status"] != FAILED_POINT]
    groups = tradeoff.same_point_groups([(p["throughput"], p["power_w"], p["jain"]) for p in solved])
    config = solver_config()
    problem = problem_from_dict(sweep.problem)
    return {
        "sweep": sweep.pk, "state_digest": sweep.state_digest,
        "status": sweep_status(sweep, statuses=[p["status"] for p in points]),
        "points_expected": sweep.points_expected, "surplus_value_w": sweep.surplus_value_w,
        "points": [{**p, "shared_by": groups.count(g)} for p, g in zip(solved, groups)],
        "distinct_points": len(set(groups)),
        "failed_points": sum(p["status"] == FAILED_POINT for p in points),
        "current": tradeoff.current_point(problem),
        "tenants": len({job.tenant for job in problem.jobs}),
        "settings": {field: getattr(config, field) for field in TRADEOFF_FIELDS},
        "can_apply": user.is_staff,
    }


def visible_job_ids(user, job_ids: list[str]) -> set[str]:
    """The ids among `job_ids` of jobs the user may see (str, as the optimiser names jobs)."""
    return {
        str(pk) for pk in jobs_visible_to(user).filter(pk__in=[int(j) for j in job_ids]).values_list("pk", flat=True)
    }
