"""What a workload does at each of a GPU type's power limits below its default, from the
predictions' optional `at_power_limit` (docs/optimization.md, "Power limits").

A limit is a decision of the round like the configuration: compile_instance offers a job's
configuration at each limit where it pays, and candidates.py a group's shared GPU at one limit.
Power limits off, predictions without the method, or a type with no levels: nothing below the
default is offered, and the round decides as it did before limits existed.
"""
from .problem import Plan, Problem

Level = tuple[float, float, float]  # (limit W, speed fraction, power fraction) of the default limit's


def limit_levels(problem: Problem, workload: str, gpu_type: str) -> list[Level]:
    """The workload's speed and power at each of the type's limits below its default, highest
    limit first, where the predictions know them (None from at_power_limit: unknown, the limit
    is not offered for that workload)."""
    at_limit = getattr(problem.predictions, "at_power_limit", None)
    if not problem.settings.power_limits or at_limit is None:
        return []
    out = []
    for limit_w in sorted(problem.gpu_types[gpu_type].power_limits_w, reverse=True):
        found = at_limit(workload, gpu_type, limit_w)
        if found is not None and found[0] > 0 and found[1] > 0:
            out.append((limit_w, float(found[0]), float(found[1])))
    return out


def planned_speeds(plan: Plan, problem: Problem) -> dict[str, float]:
    """Job id -> the fraction of its default-limit throughput the plan expects of it under the
    power limit it chose (jobs at the default are absent), as the predictions priced it. The
    control plane keeps it on the job's allocation: simulated nodes slow a job by it, and
    measurements taken at the limit are read back with the same model (dispatch.at_default_limit)."""
    at_limit = getattr(problem.predictions, "at_power_limit", None)
    if at_limit is None:
        return {}
    workloads = {job.id: job.workload for job in problem.jobs}
    speeds = {}
    for job_id, placement in plan.placements.items():
        answer = placement.power_limit_w is not None and at_limit(
            workloads[job_id], placement.gpu_type, placement.power_limit_w)
        if answer:
            speeds[job_id] = answer[0]
    return speeds


def group_power_at(power_w: float, fractions: tuple[float, ...], limit_w: float) -> float:
    """A shared GPU's power at a limit: its power at the default limit times the largest of its
    members' power fractions (the member that keeps the board busiest sets how far the limit
    pulls the power down), never above the limit itself."""
    return min(power_w * max(fractions), limit_w)


LEVEL_FRACTIONS = (0.6, 0.7, 0.8, 0.9)  # of the default limit: the levels a round may choose below it


def type_levels(tdp_w: float, boards: list[tuple[float | None, float | None, float | None, str]]) -> tuple[float, ...]:
    """A GPU type's power limits below its default, W, from its healthy boards' (lowest and
    highest limit NVML allows, default limit, why the last limit was refused): LEVEL_FRACTIONS
    of the default (the lowest default the boards report, else the datasheet TDP), kept within
    the range every board allows where they report one. A board that refused a limit leaves its
    type none: the type is planned at its current limit until the refusal clears."""
    if any(error for _, _, _, error in boards):
        return ()
    defaults = [d for _, _, d, _ in boards if d]
    default = min(defaults) if defaults else tdp_w
    low = max((lo for lo, _, _, _ in boards if lo is not None), default=0.0)
    high = min((hi for _, hi, _, _ in boards if hi is not None), default=float("inf"))
    levels = (round(f * default) for f in LEVEL_FRACTIONS)
    return tuple(sorted({w for w in levels if low <= w <= high and w < default}))
