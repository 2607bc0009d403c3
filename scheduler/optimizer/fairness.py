"""The fairness term: a weight on the share of the least-served tenant.

A tenant's share is the mean, over its jobs in the problem, of predicted throughput / T_min
(0 for a job left waiting): the quantity whose spread the dashboard's Jain index measures.
With `fairness_weight` w > 0 the power phase minimises

    weight * power  -  lambda * z,    z <= share_t for every tenant t,   lambda = w * mean TDP

so z is the least share (max-min fairness over tenants, as in Gavel's max-min policy) and w is
dimensionless: w = 1 values raising the least-served tenant's share by one (each of its jobs
one T_min faster on average) as much as the full power of one average GPU of the cluster, at
energy weight 1. The energy weight scales power and not this term, so the two weights trade
against each other. Admission stays first: w only enters the admission phase through the
bounded tie-break bonus of admission.py (on for any w > 0), never through counts.

For any fixed set of feasible decisions, minimising P - lambda * z at a larger lambda never
gives a smaller z (add the two optimality inequalities), so at the optimum a larger weight
never lowers the least-served tenant's share; Jain's index usually rises with it too, but it
is not the quantity optimised (tests: a hand-checked instance and a property test).
"""
from collections import Counter

from .choices import Choice
from .instance import Instance


def fairness_price_w(inst: Instance) -> float:
    """lambda: watts one unit of the least-served tenant's share is worth (0: off)."""
    weight = inst.problem.settings.fairness_weight
    gpus = inst.problem.gpus
    if weight <= 0 or not gpus:
        return 0.0
    return weight * sum(inst.problem.gpu_types[g.gpu_type].tdp_w for g in gpus) / len(gpus)


def tenant_sizes(inst: Instance) -> Counter:
    return Counter(job.tenant for job in inst.jobs)


def rate(inst: Instance, j: int, choice: Choice) -> float:
    """Job j's predicted throughput / T_min under a choice (0 when it waits, and for a probe: a
    measurement, not service)."""
    if choice is None or inst.jobs[j].probe:
        return 0.0
    kind, i = choice
    if kind == "g":
        tau = inst.groups[i].tau_of(j)
    else:
        tau = inst.all_options[i].tau
    return tau / inst.jobs[j].min_throughput


def least_share(inst: Instance, choices: list[Choice]) -> float:
    """The smallest tenant share of a decision (see the module's text)."""
    sizes = tenant_sizes(inst)
    shares = Counter()
    for j, choice in enumerate(choices):
        shares[inst.jobs[j].tenant] += rate(inst, j, choice) / sizes[inst.jobs[j].tenant]
    return min((shares[t] for t in sizes), default=0.0)
