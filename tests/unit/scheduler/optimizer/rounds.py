"""Consecutive rounds on a hand-made cluster for the keep-work tests: each round's placements
are fed back as the jobs' current ones, with the work they would lose (keep_work)."""
from dataclasses import dataclass, replace

from scheduler.optimizer import CurrentPlacement, Plan, Problem, RunningWork, get_solver, keep_work

from .factory import TablePredictions


@dataclass
class PowerTable(TablePredictions):
    """TablePredictions with measured watts per GPU: powers[(workload, type)]."""

    powers: dict | None = None

    def power_w(self, workload, gpu_type):
        return (self.powers or {}).get((workload, gpu_type))


def work_of(placement, *, since_checkpoint=100.0, remaining=5000.0, placed_s_ago=3600.0, preemptions=0,
            overhead=30.0) -> RunningWork:
    """A running job's work where a plan put it, at the plan's predicted rate and power."""
    return RunningWork(
        steps_since_checkpoint=since_checkpoint, remaining_steps=remaining,
        steps_per_s=placement.predicted_throughput, power_w=placement.predicted_power_w,
        num_gpus=placement.num_gpus, restart_overhead_s=overhead, placed_s_ago=placed_s_ago,
        preemptions_last_hour=preemptions, running=True,
    )


def current_of(plan: Plan, job_id: str) -> CurrentPlacement | None:
    placement = plan.placements.get(job_id)
    return CurrentPlacement(placement.gpu_ids, placement.partners) if placement else None


def with_work(p: Problem, works: dict[str, RunningWork]) -> Problem:
    """The problem with keep_work applied: jobs in `works` are placed/running, others waiting."""
    return replace(p, jobs=keep_work([(job, works.get(job.id)) for job in p.jobs], p.settings))


def next_round(p: Problem, plan: Plan, **work) -> Problem:
    """The same jobs, each placed where `plan` put it, with the work it would lose."""
    jobs = tuple(replace(job, current=current_of(plan, job.id)) for job in p.jobs)
    works = {job_id: work_of(placement, **work) for job_id, placement in plan.placements.items()}
    return with_work(replace(p, jobs=jobs), works)


def moves(before: Plan, after: Plan) -> dict[str, tuple]:
    """Jobs placed in both plans whose GPUs changed, or placed before and not after."""
    out = {}
    for job_id, placement in before.placements.items():
        now = after.placements.get(job_id)
        if now is None or now.gpu_ids != placement.gpu_ids:
            out[job_id] = (placement.gpu_ids, now.gpu_ids if now else None)
    return out


def solve(solver: str, p: Problem) -> Plan:
    return get_solver(solver).solve(p)
