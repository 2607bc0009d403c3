"""The adaptive energy weight: weight = base * (1 + (load - mean) / std), clipped.

When the cluster is busier than usual the weight rises and power counts for more against
throughput surplus; when it is quieter the weight falls. Load statistics come from the last
`window` rounds; with too little history (or no spread) the weight is the base weight.
"""
import statistics


def cluster_load(demand_gpus: float, total_gpus: int) -> float:
    """Demand (GPUs the active jobs ask for at least) over GPUs available, 0 with no GPUs."""
    return demand_gpus / total_gpus if total_gpus else 0.0


def energy_weight(
    *, base: float, current_load: float, history: tuple[float, ...], window: int, clip: tuple[float, float]
) -> float:
    recent = history[-window:] if window > 0 else ()
    if len(recent) < 2:
        return base
    mean, std = statistics.fmean(recent), statistics.pstdev(recent)
    if std <= 1e-9:
        return base
    raw = base * (1.0 + (current_load - mean) / std)
    return min(base * clip[1], max(base * clip[0], raw))
