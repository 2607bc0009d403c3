"""What a service replica's GPU costs training (docs/services.md, "What a replica's GPU costs
training"): per GPU type, a rent in W added to a replica's options alone on that type.

The objective prices a choice at its power less the worth of its surplus throughput, capped at
one T_min: it sees a replica's GPU as the replica's power only. But a GPU a replica holds is a GPU
no training job runs on, and replicas stay where they are placed (their moves are dear,
keep_work.SERVICE_MOVE_FACTOR): a replica on the type training runs most efficiently on sends
the training jobs that arrive later to a less efficient one, for the replica's whole life. In
`simulate --services` (seed 1) training ran 51 fewer GPU-hours alone on V100s beside the
services and 46 more on P100s, at 9.5 J per step there against 7.2.

The rent is that loss, as an expectation: each training job of the problem (waiting or placed)
would run most efficiently, in energy per step, on its best type; pushed to its next best type
where it still meets T_min, its steps cost `e_next - e_best` J more each, which at its speed on
the best type is `(e_next - e_best) x tau_best` W for as long as it would have held the GPU,
per GPU of its configuration. A type's rent is the mean of those losses over the jobs whose best
it is, times the share of the type's GPUs they need (at most 1): a type training needs little
costs a replica little. A job with no second type meeting its T_min is left out (it has no
cheaper place to lose to; its want of the type is its admission's, not the objective's).
"""
from collections.abc import Callable

from .aggregation import block_sizes
from .problem import JobSpec, Problem

PowerOf = Callable[[str, str], float]  # (workload, type) -> W per GPU alone


def replica_rent_w(problem: Problem, jobs: tuple[JobSpec, ...], gpus: dict[str, int], power_of: PowerOf,
                   fits: Callable[[int, str], bool]) -> dict[str, float]:
    """Per GPU type, the W a replica alone on one GPU of it costs training (0 where none).
    `gpus`: the type's GPUs that take work; `fits(j, type)`: job j's memory and type filters."""
    losses: dict[str, list[float]] = {t: [] for t in gpus}
    wanted: dict[str, int] = dict.fromkeys(gpus, 0)
    for j, job in enumerate(jobs):
        if job.service or job.probe:
            continue
        per_step = {t: found for t in gpus if fits(j, t)
                    and (found := _per_step(problem, job, t, gpus[t], power_of)) is not None}
        if len(per_step) < 2:
            continue
        best, after = sorted(per_step, key=lambda t: per_step[t][0])[:2]
        energy, tau, k = per_step[best]
        losses[best].append((per_step[after][0] - energy) * tau / k)
        wanted[best] += k
    return {t: sum(found) / len(found) * min(1.0, wanted[t] / gpus[t]) if found and gpus[t] else 0.0
            for t, found in losses.items()}


def _per_step(problem: Problem, job: JobSpec, gpu_type: str, available: int,
              power_of: PowerOf) -> tuple[float, float, int] | None:
    """(J per step, steps/s, GPUs) of the job's smallest consolidated block of the type that
    meets its T_min within its D_j (None: none does)."""
    for k in block_sizes(min(job.max_gpus, available)):
        tau = problem.predictions.tau(job.workload, gpu_type, k, True)
        if tau and tau >= job.min_throughput:
            return k * power_of(job.workload, gpu_type) / tau, tau, k
    return None
