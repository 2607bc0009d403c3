"""Each board's own speed in the plan (docs/gpu_health.md).

GpuSpec.speed is a board's throughput over its type's other boards' on the same work, the factor
on its type's prediction (telemetry.gpu_speed: learnt from the jobs it ran). The aggregated model
sees types, not boards, so a type is planned at the lowest speed among its boards that are not
flagged slow: whichever of them a job lands on, the T_min the plan promised holds. A flagged board
(GpuSpec.slow) would drag its whole type down; it is left out of that minimum instead, used last
by placement, and only for jobs whose T_min holds at its own speed (`serves`). With every speed
1.0 and nothing flagged the problem is planned as before.
"""
from dataclasses import replace

from .problem import GpuSpec, Problem


def type_speeds(gpus) -> dict[str, float]:
    """{type: the lowest speed among its boards not flagged slow (all its boards, if all are)}."""
    speeds: dict[str, list[float]] = {}
    flagged: dict[str, list[float]] = {}
    for gpu in gpus:
        (flagged if gpu.slow else speeds).setdefault(gpu.gpu_type, []).append(gpu.speed)
    return {t: min(speeds.get(t) or flagged[t]) for t in {**flagged, **speeds}}


class BoardSpeedPredictions:
    """Predictions whose throughputs on a type are scaled by its planning speed; everything else
    (co-location fractions, power, memory, uncertainty, power-limit fractions) passes through."""

    def __init__(self, inner, speeds: dict[str, float]):
        self.inner = inner
        self.speeds = speeds

    def tau(self, workload: str, gpu_type: str, num_gpus: int, consolidated: bool) -> float | None:
        tau = self.inner.tau(workload, gpu_type, num_gpus, consolidated)
        return None if tau is None else tau * self.speeds.get(gpu_type, 1.0)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def at_board_speeds(problem: Problem) -> Problem:
    """The problem with its types' throughputs at their planning speeds (itself when all are 1)."""
    speeds = type_speeds(problem.gpus)
    if all(s == 1.0 for s in speeds.values()):
        return problem
    return replace(problem, predictions=BoardSpeedPredictions(problem.predictions, speeds))


def serves(gpu: GpuSpec, planned: list[tuple[float, float]], type_speed: float) -> bool:
    """A board may take a unit whose jobs were planned at (throughput, T_min) pairs: any board
    not flagged, a flagged one only where every job's T_min holds at its own speed."""
    if not gpu.slow:
        return True
    return all(tau * gpu.speed / type_speed >= tmin for tau, tmin in planned)
