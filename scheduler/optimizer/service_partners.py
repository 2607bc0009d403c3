"""Before a solve: a service replica's training partners are released when their shared GPU no
longer gives the replica its T_min (docs/services.md, "Co-location under the SLO").

A replica's T_min rises with its traffic. A group running now stays a candidate below its
members' T_min unless a replica is the member that misses (candidates.py), but its partners
still carry their current placement, with its move price and cool-down, and the round tends to
keep them where they are or around the replica. So before the solve, every partner of a replica
whose current group is predicted below the replica's T_min (its speed alone on that GPU type at
the GPU's power limit, times the group's co-location fraction, as group_estimates.py predicts
it) loses its current placement and is placed afresh like a waiting job (it pays, where it
lands, as "Jobs keep their work" says); the replica's current placement then names no partner.
A replica whose GPU type alone is predicted below its T_min loses its current placement too, and
a replica that runs alone (its service's SLO out of reach, JobSpec.alone) loses its partners.
In `simulate` (seed 0) the P99 was violated in 2.45 % of the service-minutes without this step
and 0.64 % with it. The control plane (problem_source.py) and `simulate` both call it.
"""
from dataclasses import replace

from .group_estimates import GroupEstimates
from .problem import JobSpec, Problem


def outgrown(problem: Problem) -> set[str]:
    """Ids of the jobs to release: partners of replicas whose group misses the replica's T_min or
    that run alone, and replicas too slow for it even alone where they run."""
    replicas = [job for job in problem.jobs if job.service and job.current is not None
                and len(job.current.gpu_ids) == 1]
    if not replicas:
        return set()
    type_of = {gpu.id: gpu.gpu_type for gpu in problem.gpus}
    by_id = {job.id: job for job in problem.jobs}
    estimates = GroupEstimates(problem, sorted({job.workload for job in problem.jobs}), sorted(problem.gpu_types))
    out = set()
    for replica in replicas:
        gpu_type = type_of.get(replica.current.gpu_ids[0])
        if gpu_type is None:
            continue
        speed = _limit_speed(problem, replica.workload, gpu_type, replica.current.power_limit_w)
        alone = (problem.predictions.tau(replica.workload, gpu_type, 1, True) or 0.0) * speed
        partners = [p for p in replica.current.partners if p in by_id]
        if partners:
            found = estimates.estimate((replica.workload, *(by_id[p].workload for p in partners)), gpu_type)
            if replica.alone or (found[0][0] * speed if found else 0.0) < replica.min_throughput:
                out.update(partners)
        if alone < replica.min_throughput:
            out.add(replica.id)
    return out


def release_outgrown(problem: Problem) -> Problem:
    """The problem with the outgrown jobs' current placements taken away (see the module)."""
    out = outgrown(problem)
    if not out:
        return problem
    return replace(problem, jobs=tuple(_released(job, out) for job in problem.jobs))


def _released(job: JobSpec, out: set[str]) -> JobSpec:
    if job.id in out:
        return replace(job, current=None, move_penalty_w=None, pinned=False)
    if job.current is not None and out.intersection(job.current.partners):
        partners = tuple(p for p in job.current.partners if p not in out)
        return replace(job, current=replace(job.current, partners=partners))
    return job


def _limit_speed(problem: Problem, workload: str, gpu_type: str, limit_w: float | None) -> float:
    at_limit = getattr(problem.predictions, "at_power_limit", None)
    found = at_limit(workload, gpu_type, limit_w) if at_limit and limit_w is not None else None
    return found[0] if found else 1.0
