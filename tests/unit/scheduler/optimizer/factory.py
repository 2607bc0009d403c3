"""Small hand-made problems for the optimiser's tests: predictions from plain dicts."""
from dataclasses import dataclass, field

from scheduler.optimizer import CurrentPlacement, GpuSpec, GpuTypeSpec, JobSpec, PowerCurve, Problem, SolverSettings


@dataclass
class TablePredictions:
    """tau[(workload, type, k, consolidated)], rho[(workload, partner, type)], memories[workload] (GB)."""

    taus: dict = field(default_factory=dict)
    rhos: dict = field(default_factory=dict)
    memories: dict = field(default_factory=dict)

    def tau(self, workload, gpu_type, num_gpus, consolidated):
        return self.taus.get((workload, gpu_type, num_gpus, consolidated or num_gpus == 1))

    def rho(self, workload, partner, gpu_type):
        return self.rhos.get((workload, partner, gpu_type))

    def utilization(self, workload, gpu_type):
        return None

    def power_w(self, workload, gpu_type):
        return None

    def memory_gb(self, workload):
        return self.memories.get(workload)


def gpu_type(name: str, tdp: float, idle: float = 10.0, memory: float = 16.0) -> GpuTypeSpec:
    return GpuTypeSpec(name, memory, idle, tdp, PowerCurve.from_points([], idle, tdp))


def node(gpu_type_name: str, name: str, count: int, switch_every: int = 0) -> list[GpuSpec]:
    return [
        GpuSpec(f"{name}-{i}", name, gpu_type_name, f"sw{i // switch_every}" if switch_every else "")
        for i in range(count)
    ]


def job(id, workload="w", tenant="t", tmin=1.0, dj=1, priority=0, current=None, memory=None) -> JobSpec:
    placement = CurrentPlacement(tuple(current[0]), tuple(current[1])) if current else None
    return JobSpec(str(id), workload, tenant, tmin, dj, priority, memory_gb=memory, current=placement)


def problem(jobs, gpus, types, predictions, **settings) -> Problem:
    defaults = {"adaptive_weight": False, "time_limit_s": 5.0}
    return Problem(
        jobs=tuple(jobs), gpus=tuple(gpus), gpu_types={t.name: t for t in types}, predictions=predictions,
        settings=SolverSettings(**{**defaults, **settings}),
    )
