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
"""
from dataclasses import replace


def price_staying(inst) -> None:
    """Rewrite, in place, the current options of the instance's jobs measured below T_min."""
    for j, job in enumerate(inst.jobs):
        if job.measured_throughput is None:
            continue
        current = [i for i in inst.job_options[j] if inst.all_options[i].current]
        paying = [inst.all_options[i].cost for i in inst.job_options[j]
                  if not inst.all_options[i].current and inst.all_options[i].meets_slo
                  and inst.all_options[i].tau >= job.move_pays_at]
        for i in current:
            opt = inst.all_options[i]
            cost = max(opt.cost, max(paying) + inst.problem.settings.migration_cost_w) if paying else opt.cost
            inst.all_options[i] = replace(opt, tau=min(opt.tau, job.measured_throughput), meets_slo=False, cost=cost)
