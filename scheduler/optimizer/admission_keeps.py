"""A running job whose move would throw away much work keeps what it holds while the admission
phase fills a lower priority level (docs/optimization.md, "Moves that pay for themselves").

The admission phase admits the most jobs, level by level, before any price counts (ilp.py), so
a move's penalty (keep_work.py) never weighs there: to start one waiting job, a level's program
would move a running job of a higher level onto another GPU type or into a shared GPU, and a
job that never checkpoints then throws away all its progress (docs/tenants.md). So in the
program of a level below its own, moving a `kept` job (a running job whose move throws away
more than KEEPS_WORK_S GPU-seconds) costs more than the whole level's admitted value: the
waiting job waits for capacity that frees without that loss.

A kept job still moves where the move pays for itself (the power phase prices it), leaves a
board at risk or a configuration below its T_min at its checkpoint (those jobs are not kept),
and is still preempted by a higher priority. A job of a tenant that holds more than its quota
of the job's GPU type now (a borrower) is not kept where the type's borrowers together hold
more than its cohort pool (quotas.Quotas.pool): an owner gets its quota back (quotas.py), from
the borrowers that lose least first (admission.py). Borrowers that the pool holds take nothing
an owner can reclaim, and are kept like any other job.
"""
from collections import defaultdict

from .choices import Choice
from .instance import Instance

KEEPS_WORK_S = 24 * 3600.0  # a GPU-day: GPU-seconds a move would throw away above which admission keeps the job


def kept(inst: Instance) -> dict[int, list[Choice]]:
    """Job index -> the choices that keep it where it runs (its current option at any power
    limit, its running group) for each kept job that has one."""
    type_of = {gpu.id: gpu.gpu_type for gpu in inst.problem.gpus}
    lent = borrowing(inst, type_of)
    out: dict[int, list[Choice]] = {}
    for j, job in enumerate(inst.jobs):
        if (job.current is None or not job.current.gpu_ids or job.work_at_risk <= KEEPS_WORK_S or job.leaving
                or job.probe or job.service or job.move_pays_at is not None
                or (job.tenant, type_of.get(job.current.gpu_ids[0])) in lent):
            continue
        stays = [("o", i) for i in inst.job_options[j] if inst.all_options[i].current]
        stays += [("g", p) for p in inst.job_groups[j] if inst.groups[p].current]
        if stays:
            out[j] = stays
    return out


def borrowing(inst: Instance, type_of: dict[str, str]) -> set[tuple[str, str]]:
    """(tenant, GPU type) where the tenant's running jobs hold more GPUs than its quota there,
    on a type whose borrowers together hold more than its pool (some of it an owner reclaims)."""
    if not inst.quotas.nominal:
        return set()
    held: dict[tuple[str, str | None], set[str]] = defaultdict(set)
    for job in inst.jobs:
        for gpu_id in job.current.gpu_ids if job.current is not None else ():
            held[(job.tenant, type_of.get(gpu_id))].add(gpu_id)
    over = {key: len(gpus) - inst.quotas.owns(*key) for key, gpus in held.items()}
    lent: dict[str | None, int] = defaultdict(int)
    for (_, gpu_type), n in over.items():
        lent[gpu_type] += max(n, 0)
    return {key for key, n in over.items() if n > 0 and lent[key[1]] > inst.quotas.pool.get(key[1], 0)}
