"""A job's throughput when it shares one GPU with several partners, estimated from pairs.

The catalog measures co-location for pairs only (Gavel: 26 x 26 ordered pairs on each GPU
type); nobody measured groups of three or more. To let more than two jobs share a GPU
(theta > 2), a member's co-located fraction in a group is estimated from its pairwise ones
under an additive-slowdown model: each partner adds the slowdown it causes alone,

    1 / rho(w, G) - 1 = sum over partners p in G of (1 / rho(w, p) - 1),

i.e. the time per step grows by each partner's share, as when partners take turns on the
GPU's time. For one partner it is the measured pair exactly, so pairs keep their figures.
It is an estimate, not a measurement: it ignores memory-bandwidth and cache contention that
grows faster than additively, so it errs optimistic for dense groups; docs/optimization.md
says so and the telemetry never records a group's throughput as a pair's. Pure Python: the
optimiser, the simulated cluster and simulated jobs on the agent all use it. It lives in the
agent package because a node installs only that package (docs/agent.md) and its simulated jobs
need it; the scheduler, which stacks above telemetry, imports it from here.
"""
from collections.abc import Iterable


def group_fraction(pair_fractions: Iterable[float]) -> float:
    """A job's throughput next to all its partners together, as a fraction of alone, from
    its fraction next to each partner alone (0 if any pair does not fit: neither does the
    group). No partners: 1 (alone)."""
    fractions = list(pair_fractions)
    if len(fractions) == 1:  # the measured pair itself (1 / (1 / rho) may differ in the last bit)
        return max(fractions[0], 0.0)
    slowdown = 0.0
    for rho in fractions:
        if rho <= 0.0:
            return 0.0
        slowdown += 1.0 / rho - 1.0
    return 1.0 / (1.0 + slowdown)
