"""Problems and plans as JSON-able dicts, so a cell can be solved in another process
(a Celery worker) and its plan sent back. Predictions travel as a snapshot of the values
the cell's jobs can ask for (every workload x GPU type x GPU count x placement, every pair of
workloads), not as the catalog they come from."""
from dataclasses import asdict

from .aggregation import block_sizes
from .power import PowerCurve
from .problem import (
    CurrentPlacement,
    GpuSpec,
    GpuTypeSpec,
    JobSpec,
    Placement,
    Plan,
    Problem,
    QuotaSpec,
    SolverSettings,
)


class PredictionSnapshot:
    """Predictions from tables: [workload, type, k, consolidated, tau], [workload, partner,
    type, rho], [workload, type, utilization], [workload, type, watts], [workload, GB],
    [workload, type, k, consolidated, log_sd, measured] (only where not (0, measured)),
    [workload, type, limit W, speed, power] (at_power_limit, at each type's power_limits_w)."""

    def __init__(self, taus, rhos, utilizations, powers, memories=(), doubts=(), limits=()):
        self._tau = {(w, t, k, c): v for w, t, k, c, v in taus}
        self._doubt = {(w, t, k, c): (sd, bool(measured)) for w, t, k, c, sd, measured in doubts}
        self._rho = {(w, p, t): v for w, p, t, v in rhos}
        self._util = {(w, t): v for w, t, v in utilizations}
        self._power = {(w, t): v for w, t, v in powers}
        self._memory = dict(memories)
        self._limits = {(w, t, limit): (speed, power) for w, t, limit, speed, power in limits}

    @classmethod
    def of(cls, predictions, workloads, gpu_types, largest: int) -> "PredictionSnapshot":
        ws, ts = sorted(workloads), sorted(gpu_types)
        memory = getattr(predictions, "memory_gb", None) or (lambda workload: None)
        doubt = getattr(predictions, "uncertainty", None) or (lambda *config: (0.0, True))
        at_limit = getattr(predictions, "at_power_limit", None) or (lambda *at: None)
        configs = [(k, c) for k in block_sizes(largest) for c in ((True, False) if k > 1 else (True,))]
        return cls(
            [
                [w, t, k, c, v]
                for w in ws for t in ts for k, c in configs if (v := predictions.tau(w, t, k, c)) is not None
            ],
            [[w, p, t, v] for w in ws for p in ws for t in ts if (v := predictions.rho(w, p, t)) is not None],
            [[w, t, v] for w in ws for t in ts if (v := predictions.utilization(w, t)) is not None],
            [[w, t, v] for w in ws for t in ts if (v := predictions.power_w(w, t)) is not None],
            [[w, v] for w in ws if (v := memory(w)) is not None],
            [
                [w, t, k, c, *d] for w in ws for t in ts for k, c in configs
                if predictions.tau(w, t, k, c) is not None and (d := doubt(w, t, k, c)) != (0.0, True)
            ],
            [
                [w, t, limit, *found] for w in ws for t in ts for limit in gpu_types[t].power_limits_w
                if (found := at_limit(w, t, limit)) is not None
            ],
        )

    def tables(self) -> dict:
        return {
            "taus": [[*k, v] for k, v in self._tau.items()],
            "rhos": [[*k, v] for k, v in self._rho.items()],
            "utilizations": [[*k, v] for k, v in self._util.items()],
            "powers": [[*k, v] for k, v in self._power.items()],
            "memories": [[w, v] for w, v in self._memory.items()],
            "doubts": [[*k, *v] for k, v in self._doubt.items()],
            "limits": [[*k, *v] for k, v in self._limits.items()],
        }

    def tau(self, workload, gpu_type, num_gpus, consolidated):
        return self._tau.get((workload, gpu_type, num_gpus, consolidated or num_gpus == 1))

    def uncertainty(self, workload, gpu_type, num_gpus, consolidated):
        return self._doubt.get((workload, gpu_type, num_gpus, consolidated or num_gpus == 1), (0.0, True))

    def rho(self, workload, partner, gpu_type):
        return self._rho.get((workload, partner, gpu_type))

    def utilization(self, workload, gpu_type):
        return self._util.get((workload, gpu_type))

    def power_w(self, workload, gpu_type):
        return self._power.get((workload, gpu_type))

    def memory_gb(self, workload):
        return self._memory.get(workload)

    def at_power_limit(self, workload, gpu_type, limit_w):
        return self._limits.get((workload, gpu_type, limit_w))


def problem_to_dict(problem: Problem) -> dict:
    largest = max([j.max_gpus for j in problem.jobs] + [1])
    snapshot = PredictionSnapshot.of(
        problem.predictions, {j.workload for j in problem.jobs}, problem.gpu_types, largest
    )
    return {
        "jobs": [asdict(j) for j in problem.jobs],
        "gpus": [{**asdict(g), "power_curve": _points(g.power_curve)} for g in problem.gpus],
        "gpu_types": [
            {**asdict(t), "power_curve": [list(p) for p in t.power_curve.points]} for t in problem.gpu_types.values()
        ],
        "predictions": snapshot.tables(),
        "settings": {**asdict(problem.settings), "weight_clip": list(problem.settings.weight_clip)},
        "load_history": list(problem.load_history),
        "matching": None if problem.matching is None else [list(chain) for chain in problem.matching],
        "admission_start": None if problem.admission_start is None else [
            [*row[:4], list(row[4])] for row in problem.admission_start
        ],
        "quotas": [asdict(q) for q in problem.quotas],
        "no_borrowing": sorted(problem.no_borrowing),
    }


def problem_from_dict(data: dict) -> Problem:
    jobs = tuple(
        JobSpec(**{**j, "current": _current(j["current"])})
        for j in data["jobs"]
    )
    types = {
        t["name"]: GpuTypeSpec(**{**t, "power_curve": PowerCurve(tuple(tuple(p) for p in t["power_curve"])),
                                  "power_limits_w": tuple(t.get("power_limits_w", ()))})
        for t in data["gpu_types"]
    }
    settings = data["settings"]
    return Problem(
        jobs=jobs,
        gpus=tuple(GpuSpec(**{**g, "power_curve": _curve(g.get("power_curve"))}) for g in data["gpus"]),
        gpu_types=types,
        predictions=PredictionSnapshot(**data["predictions"]),
        settings=SolverSettings(**{**settings, "weight_clip": tuple(settings["weight_clip"])}),
        load_history=tuple(data["load_history"]),
        matching=None if data["matching"] is None else tuple(tuple(chain) for chain in data["matching"]),
        admission_start=None if data.get("admission_start") is None else tuple(
            (*row[:4], tuple(row[4] or ())) for row in data["admission_start"]
        ),
        quotas=tuple(QuotaSpec(**q) for q in data.get("quotas", ())),
        no_borrowing=frozenset(data.get("no_borrowing", ())),
    )


def plan_to_dict(plan: Plan) -> dict:
    return {**asdict(plan), "placements": [asdict(p) for p in plan.placements.values()]}


def plan_from_dict(data: dict) -> Plan:
    placements = {
        p["job_id"]: Placement(**{
            **{k: v for k, v in p.items() if k != "partner"}, "gpu_ids": tuple(p["gpu_ids"]), "partners": _partners(p),
        })
        for p in data["placements"]
    }
    return Plan(**{**data, "placements": placements})


def _current(data: dict | None) -> CurrentPlacement | None:
    return CurrentPlacement(tuple(data["gpu_ids"]), _partners(data), data.get("power_limit_w")) if data else None


def _partners(data: dict) -> tuple[str, ...]:
    """A placement's partners; payloads written before groups (a cell problem still in a
    queue, a stored trade-off sweep) carry one `partner` or None, and still load."""
    if "partners" in data:
        return tuple(data["partners"])
    return (data["partner"],) if data.get("partner") else ()


def _points(curve: PowerCurve | None) -> list | None:
    return None if curve is None else [list(p) for p in curve.points]


def _curve(points) -> PowerCurve | None:
    return None if points is None else PowerCurve(tuple(tuple(p) for p in points))
