"""Reads behind the dashboard pages, scoped to what the user may see (their tenant's jobs;
staff see all). Cluster-wide facts (nodes, GPUs, power, predictors, solver rounds) are shown
to every signed-in user, as the live layer's cluster-wide events are."""
from collections import defaultdict
from datetime import timedelta

from django.db.models import Avg, Count, Max, Min, OuterRef, Q, Subquery
from django.utils import timezone

from catalog.models import GpuType, Measurement, PredictionRecord, PredictorVersion, Workload
from gogh_web.events.selectors import ENDED_STATES, ended_jobs_kept, jobs_data
from scheduler.lifecycle import JobState
from scheduler.models import Allocation, Job, SolveRun, SolverConfig, SolverConfigChange
from scheduler.problem_source import ACTIVE_STATES
from scheduler.selectors import jobs_visible_to
from telemetry.models import Gpu, GpuSample, GpuSampleMinute, Node, NodeState

RECENT_SOLVE_RUNS = 30


# --- Cluster
def gpu_rows() -> list[dict]:
    """Every GPU with its latest sample (power, utilisation, temperature, when)."""
    latest = GpuSample.objects.filter(gpu=OuterRef("pk")).order_by("-ts")
    gpus = (
        Gpu.objects.select_related("node", "gpu_type")
        .annotate(
            power_w=Subquery(latest.values("power_w")[:1]),
            utilization=Subquery(latest.values("utilization")[:1]),
            temperature_c=Subquery(latest.values("temperature_c")[:1]),
            sampled_at=Subquery(latest.values("ts")[:1]),
        )
        .order_by("node__hostname", "index")
    )
    return [
        {
            "id": g.pk, "name": f"{g.node.hostname}/{g.index}", "node": g.node.hostname, "node_state": g.node.state,
            "gpu_type": g.gpu_type.name, "state": g.state, "power_w": g.power_w, "utilization": g.utilization,
            "temperature_c": g.temperature_c, "sampled_at": g.sampled_at,
        }
        for g in gpus
    ]


def cluster_overview(*, now=None, stale_s: float = 120.0) -> dict:
    now = now or timezone.now()
    gpus = gpu_rows()
    fresh = [g for g in gpus if g["power_w"] is not None and g["sampled_at"] and now - g["sampled_at"] <= timedelta(seconds=stale_s)]
    by_type: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for gpu in gpus:
        by_type[gpu["gpu_type"]][gpu["state"]] += 1
    return {
        "nodes": list(Node.objects.annotate(gpu_count=Count("gpus")).order_by("hostname")),
        "nodes_down": Node.objects.filter(state=NodeState.DOWN).count(),
        "gpus": gpus,
        "gpus_by_type": {t: dict(states) for t, states in sorted(by_type.items())},
        "power_now_w": sum(g["power_w"] for g in fresh),
        "energy_today_wh": energy_today_wh(now=now),
    }


def energy_today_wh(*, now=None) -> float:
    """Energy drawn since midnight UTC: per GPU, raw samples' mean power times the span they
    cover, plus each per-minute aggregate's mean power over its sampled seconds (one sample a
    second, the agents' rate)."""
    now = now or timezone.now()
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    joules = 0.0
    spans = (
        GpuSample.objects.filter(ts__gte=midnight, power_w__isnull=False)
        .values("gpu")
        .annotate(mean=Avg("power_w"), first=Min("ts"), last=Max("ts"), count=Count("id"))
    )
    for span in spans:
        seconds = max((span["last"] - span["first"]).total_seconds(), float(span["count"] > 0))
        joules += span["mean"] * seconds
    for mean, samples in GpuSampleMinute.objects.filter(minute__gte=midnight, power_w_mean__isnull=False).values_list(
        "power_w_mean", "samples"
    ):
        joules += mean * samples
    return joules / 3600.0


# --- Jobs
def job_rows(user) -> list[dict]:
    """The jobs the live snapshot would hold for the user (active ones, and the cluster's most
    recently ended ones that the user may see), built by the live layer's own state builder, so
    the server-rendered rows and the live ones are the same dicts. Active first (by priority,
    then age), then ended ones, newest first."""
    ended = Job.objects.filter(state__in=ENDED_STATES).order_by("-finished_at", "-id").values_list("pk", flat=True)
    jobs = jobs_visible_to(user).filter(Q(state__in=ACTIVE_STATES) | Q(pk__in=list(ended[: ended_jobs_kept()])))
    rows = list(jobs_data(jobs).values())
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
    1 = predicted by a stored P1/P2 estimate, 0 = unknown. Single-GPU configurations."""
    workloads = list(Workload.objects.order_by("name").values_list("name", flat=True))
    types = list(GpuType.objects.order_by("name").values_list("name", flat=True))
    measured = set(
        Measurement.objects.filter(num_gpus=1, throughput__gt=0)
        .values_list("workload__name", "gpu_type__name", "partner__name")
        .distinct()
    )
    predicted: set[tuple[str, str, str | None]] = set()
    newest = PredictionRecord.objects.filter(shadow=False).values("workload_id").annotate(newest=Max("id")).values("newest")
    for name, estimates in PredictionRecord.objects.filter(pk__in=newest).values_list("workload__name", "estimates"):
        for partner, row in zip(estimates.get("partners", []), estimates.get("rho", [])):
            for gpu_type, value in zip(estimates.get("gpu_types", []), row):
                if value is not None:
                    predicted.add((name, gpu_type, partner))
        for config, value in zip(estimates.get("configs", []), estimates.get("tau", [])):
            if config[1] == 1 and value:
                predicted.add((name, config[0], None))
    columns = [None, *workloads]

    def cell(w, t, p):
        return MEASURED if (w, t, p) in measured else PREDICTED if (w, t, p) in predicted else UNKNOWN

    return {
        "workloads": workloads,
        "partners": ["(alone)", *workloads],
        "by_type": {t: [[cell(w, t, p) for p in columns] for w in workloads] for t in types},
    }


# --- Solver
def recent_solve_runs() -> list[SolveRun]:
    return list(SolveRun.objects.order_by("-started_at", "-id")[:RECENT_SOLVE_RUNS])


def solver_config() -> SolverConfig:
    return SolverConfig.load()


def solver_config_changes() -> list[SolverConfigChange]:
    return list(SolverConfigChange.objects.select_related("changed_by")[:20])


# --- Trade-off
def current_served() -> dict[str, tuple[float, float]]:
    """Job id -> (predicted throughput, predicted power) of every job holding GPUs now."""
    served: dict[str, list[float]] = {}
    for job_id, throughput, power in Allocation.objects.filter(end__isnull=True, job__state__in=ACTIVE_STATES).values_list(
        "job_id", "predicted_throughput", "predicted_power_w"
    ):
        entry = served.setdefault(str(job_id), [throughput or 0.0, 0.0])
        entry[1] += power or 0.0
    return {job_id: (t, p) for job_id, (t, p) in served.items()}
