"""A running job measured below its T_min where it runs moves where a configuration is predicted
to meet T_min and the move pays (keep_work.below_tmin, docs/optimization.md).

A job's current option is always offered, even below T_min: stopping it would throw away its
work. Priced at its power with no move cost, it always beat every move, so a job whose prediction
said it met T_min, and which truly ran a few % below, stayed below for its whole life (simulate,
seed 1: one such job set half of the run's SLO violation). So its measurements, not its
prediction, decide: for a job measured below T_min (JobSpec.measured_throughput), its current
options are planned at the measured rate (they no longer meet T_min), and where one of its other
options meets T_min at a rate at which the move pays (JobSpec.move_pays_at), staying is priced
above the dearest of them by the flat migration cost, so the plan moves it wherever one has room
and keeps it where none has (its current option stays offered as the fallback).

A group running now stays a candidate below its members' T_min (candidates.py), and was priced
at its GPU's power: a job measured below its T_min beside its partner stayed there for good
(simulate --health, seed 2: 165 h, 0.5 % below). Its group is planned at the measured rate too,
and, where a member measured below has somewhere that pays, priced above what parting costs at
most (the dearest paying option of each member that has one, the dearest option of each other:
it stays on the GPU alone, or goes elsewhere) by the migration cost: the plan parts the group
wherever the members have room, and keeps it where they have none.
"""
from dataclasses import replace


def price_staying(inst) -> None:
    """Rewrite, in place, the current options and groups of the instance's jobs measured below T_min."""
    paying = {j: _paying(inst, j) for j, job in enumerate(inst.jobs) if job.measured_throughput is not None}
    for j, costs in paying.items():
        measured = inst.jobs[j].measured_throughput
        for i in (i for i in inst.job_options[j] if inst.all_options[i].current):
            opt = inst.all_options[i]
            cost = max(opt.cost, max(costs) + inst.problem.settings.migration_cost_w) if costs else opt.cost
            inst.all_options[i] = replace(opt, tau=min(opt.tau, measured), meets_slo=False, cost=cost)
    for g, group in enumerate(inst.groups):
        below = {x: [] if inst.jobs[x].pinned else paying[x] for x in group.members if x in paying}  # pinned: it stays
        if group.current and below:
            inst.groups[g] = _priced_group(inst, group, below)


def _paying(inst, j: int) -> list[float]:
    """Costs of job j's options that move it to where it is predicted to meet T_min at a rate at
    which the move pays."""
    job = inst.jobs[j]
    return [inst.all_options[i].cost for i in inst.job_options[j]
            if not inst.all_options[i].current and inst.all_options[i].meets_slo
            and inst.all_options[i].tau >= job.move_pays_at]


def _priced_group(inst, group, paying: dict[int, list[float]]):
    """The running group planned at its members' measured rates and priced to part where a member
    measured below has somewhere that pays (`paying`: each such member's paying option costs):
    above the dearest paying option of each member that has one and the dearest option of each
    other member (unchanged where none pays, or a member has no option alone: the group is then
    all it has)."""
    taus = tuple(min(tau, inst.jobs[x].measured_throughput) if x in paying else tau
                 for x, tau in zip(group.members, group.taus))
    if not any(paying.values()):
        return replace(group, taus=taus)
    parted = 0.0
    for x in group.members:
        costs = paying.get(x) or [inst.all_options[i].cost for i in inst.job_options[x]]
        if not costs:
            return replace(group, taus=taus)
        parted += max(costs)
    return replace(group, taus=taus, cost=max(group.cost, parted + inst.problem.settings.migration_cost_w))
