"""State builders: one function per kind turning model instances into the plain dict that both
the snapshot and the events carry, so a page's state after applying events is comparable, key
for key, with a fresh snapshot.

Pure Python (no Django import): callers (selectors.py) fetch the instances and their related
rows; these functions only read attributes. Datetimes become ISO 8601 strings and non-finite
floats None, so every dict is valid JSON for any database's JSON column.
"""
import math

KINDS = ("job", "node", "gpu", "solve_run", "solver_config", "predictor_version")
#: What an event does to state[kind][key]: set it to the event's data, or remove it.
UPSERT, DELETE = "upsert", "delete"
#: The kind of the marker stored when an event could not be: sockets tell their page to resync.
RESYNC = "resync"
MET, VIOLATED, UNKNOWN = "met", "violated", "unknown"
#: Fields of a SolveRun that pages show; the full decision stays in the admin and the API.
SOLVE_RUN_FIELDS = (
    "id", "trigger", "solver", "status", "dry_run", "shadow", "objective", "gap", "duration_s", "num_jobs", "num_gpus",
    "num_variables", "num_constraints", "fallback_reason", "power_w", "num_placed", "load", "energy_weight",
    "started_at", "finished_at",
)


def iso(value) -> str | None:
    return value.isoformat() if value is not None else None


def number(value) -> float | None:
    """A float for JSON: None stays None, and so do NaN and infinities (PostgreSQL's jsonb refuses them)."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def plain(value):
    """A model field's value as JSON: datetimes as ISO strings, non-finite floats as None."""
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if isinstance(value, float):
        return number(value)
    return value


def slo_status(min_throughput: float, observed: float | None) -> str:
    """Whether the job gets its T_min, by what telemetry observed; unknown until it observed something."""
    if observed is None:
        return UNKNOWN
    return MET if observed >= min_throughput else VIOLATED


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


def job_state(job, *, allocations, observed_throughput: float | None, partner_job_ids=()) -> dict:
    """A job (workload, tenant and owner loaded) with its open allocations, the ids of the jobs
    sharing its GPUs and the newest throughput telemetry observed for it."""
    predicted = next((a.predicted_throughput for a in allocations if a.predicted_throughput is not None), None)
    observed = number(observed_throughput)
    total = job.total_steps
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
        "slo": slo_status(job.min_throughput, observed),
        "submitted_at": iso(job.submitted_at),
        "placed_at": iso(job.placed_at),
        "started_at": iso(job.started_at),
        "finished_at": iso(job.finished_at),
        "deadline": iso(job.deadline),
        "progress": {
            "steps_done": job.steps_done,
            "total_steps": total,
            "fraction": min(1.0, job.steps_done / total) if total else None,
        },
    }


def node_state(node, *, gpu_count: int) -> dict:
    """A node and how many GPUs it reports. The heartbeat time is left out on purpose: it changes
    every few seconds and would cost an event each time; the state says what matters."""
    return {
        "id": node.pk,
        "hostname": node.hostname,
        "state": node.state,
        "state_reason": node.state_reason,
        "cell": node.cell,
        "labels": node.labels,
        "agent_version": node.agent_version,
        "gpu_count": gpu_count,
        "registered_at": iso(node.registered_at),
    }


def gpu_state(gpu, *, sample) -> dict:
    """A GPU (node and type loaded) with its newest raw sample (or None)."""
    return {
        "id": gpu.pk,
        "node_id": gpu.node_id,
        "node": gpu.node.hostname,
        "index": gpu.index,
        "uuid": gpu.uuid,
        "gpu_type": gpu.gpu_type.name,
        "state": gpu.state,
        "state_reason": gpu.state_reason,
        "power_w": number(sample.power_w) if sample else None,
        "utilization": number(sample.utilization) if sample else None,
        "temperature_c": number(sample.temperature_c) if sample else None,
        "memory_used_mb": number(sample.memory_used_mb) if sample else None,
        "sampled_at": iso(sample.ts) if sample else None,
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


def predictor_version_state(version) -> dict:
    """A predictor version: its numeric metrics (not the held-out name lists) and what it trained on."""
    metrics = {
        k: number(v) for k, v in version.metrics.items() if isinstance(v, (int, float)) and not isinstance(v, bool)
    }
    return {
        "id": version.pk,
        "name": version.name,
        "architecture": version.architecture,
        "status": version.status,
        "val_mae": number(version.metrics.get("val_mae")),
        "metrics": metrics,
        "training_records": version.training_data.get("records"),
        "parent_id": version.parent_id,
        "note": version.note,
        "created_at": iso(version.created_at),
    }
