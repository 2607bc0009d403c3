"""What a service replica's GPU costs training (docs/services.md, "What a replica's GPU costs
training"): per GPU type, a rent added to the objective's cost of a replica's options alone on
that type.

The objective prices a replica's GPU at the replica's power (less its surplus's worth). But a GPU a
replica holds is a GPU no training job runs on, and replicas stay where they are placed (their moves
are dear, keep_work.SERVICE_MOVE_FACTOR): a replica on the type the objective would give training
sends the training jobs that arrive later to a type it values less, for the replica's whole life.
In `simulate --services` (seed 4) the replicas held 173 P100 GPU-hours and the A3C jobs, which ran
on P100s without the services at 17 J per step, ran on V100s at 28.

The rent is that loss in the objective's own terms, as an expectation: each training job of the
problem (waiting or placed) has a type where its cheapest configuration meeting T_min costs the
objective least (its power, less the worth of its surplus, per GPU, as if it were not placed
yet); pushed to its next cheapest type, it costs the difference more for as long as it would
have held the GPU. A type's rent is the mean of those differences over the jobs whose best it
is, times the share of the type's GPUs they need (at most 1): a type training needs little costs
a replica little. A job with no second type meeting its T_min is left out (it has no cheaper
place to lose to; its want of the type is its admission's, not the objective's).
"""

#: Per training job, per type: (the objective's cost per GPU of its cheapest configuration
#: meeting T_min there, that configuration's GPUs).
Alone = dict[str, tuple[float, int]]


def replica_rent(alone: list[Alone], gpus: dict[str, int]) -> dict[str, float]:
    """Per GPU type, what a replica alone on one GPU of it costs training in the objective (0
    where nothing). `alone`: one entry per training job; `gpus`: the type's GPUs that take work."""
    losses: dict[str, list[float]] = {t: [] for t in gpus}
    wanted: dict[str, int] = dict.fromkeys(gpus, 0)
    for costs in alone:
        found = sorted((cost, t) for t, (cost, _) in costs.items() if t in gpus)
        if len(found) < 2:
            continue
        (best_cost, best), (next_cost, _) = found[:2]
        losses[best].append(next_cost - best_cost)
        wanted[best] += costs[best][1]
    return {t: sum(found) / len(found) * min(1.0, wanted[t] / gpus[t]) if found and gpus[t] else 0.0
            for t, found in losses.items()}
