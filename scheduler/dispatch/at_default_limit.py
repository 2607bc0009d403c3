"""A job's throughput and power measured while its GPUs ran below their default power limit,
brought back to what they would be at the default (docs/power_limits.md).

The catalog, P1/P2 and the per-board speeds all hold figures at the default limit, and the
optimiser prices each lower limit as a fraction of them (Predictions.at_power_limit). A
measurement taken at a limit and stored as it is would teach a workload as slower than it is,
and the next rounds would price every limit from that lower base, round after round. So it is
divided by the same fractions the optimiser applies: the power-limit model
(catalog.predictors.power_limits) at the same limit, with the same draw at the default (the
reference and profiling measurements' power of the workload alone on the type, which telemetry
never moves), corrected by the workload's limit readings
(limit_observations.py), so that planning the job again at that limit predicts what was
measured. The limit is the one the round set (the agent applies it within a poll of its
assignments, and the job slows at once), except where the board refused it or none was set: then
the one it reports in force (a refusing board ran at its default; a limit set outside GOGH slows
the job as well). The lowest of the job's GPUs counts: a multi-GPU job moves at its slowest
GPU's pace. The limit in force as last reported lags by up to a heartbeat: a board reports a new
limit an interval after its job slowed under it."""
from collections.abc import Iterable

from catalog.selectors import reference_draws

#: A limit within this fraction of the default counts as the default (NVML rounds to whole W).
AT_DEFAULT = 0.995


def limit_of(allocations: Iterable) -> float | None:
    """The power limit (W) the job's GPUs ran at, None at their defaults."""
    limits = []
    for allocation in allocations:
        gpu = allocation.gpu
        asked = allocation.power_limit_w is not None and not gpu.power_limit_error
        limit = allocation.power_limit_w if asked else gpu.power_limit_w
        default = gpu.power_limit_default_w or gpu.gpu_type.tdp_w
        if limit is not None and default and limit < AT_DEFAULT * default:
            limits.append(limit)
    return min(limits) if limits else None


def fractions_at(workload: str, gpu_type: str, limit_w: float | None) -> tuple[float, float, float | None] | None:
    """(speed, power) at `limit_w` (None: the default, (1, 1)) as fractions of the default limit's,
    as the power-limit model answers before telemetry's correction, and the workload's draw at the
    default as known without telemetry (catalog.selectors.reference_draws: W, None when unknown),
    which the model takes as the planner does; None when the model knows nothing there (such a
    measurement is not recorded)."""
    # Imported here: the model loads numpy and the Zeus data, which a round at default limits
    # never needs.
    from catalog.predictors.power_limits import default_model

    draw_w = reference_draws(names={workload}).get((workload, gpu_type))
    if limit_w is None:
        return 1.0, 1.0, draw_w
    answer = default_model().at_power_limit(workload, gpu_type, limit_w, draw_w=draw_w)
    if answer is None or answer[0] <= 0 or answer[1] <= 0:
        return None
    return answer[0], answer[1], draw_w
