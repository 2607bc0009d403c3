"""Placement's last resort for an admitted multi-GPU job that finds no node: free one for it.

The aggregated model counts a GPU type's free GPUs, not where they are: it admits a job that
needs k GPUs of one node (a consolidated option) where k GPUs of the type are free, though
one-GPU jobs that stay on their GPUs may hold one or two of every node's. Placement keeps
running jobs where they are, so such a job would wait round after round with its type's
capacity free (docs/tenants.md: a 4-GPU job of a tenant within its quota waited tens of hours
beside 4 free V100s spread over two nodes). Here the node that needs the fewest one-GPU units
moved (then the least work thrown away) is freed: those units move to free GPUs of the same
type on other nodes, where they run at the same planned rate, and the job takes the node.

What may move: a one-GPU unit (a job alone, or a shared GPU's jobs) placed on the node this
round (nothing is lost), or running there, where none of its running jobs is a service replica,
a probe, pinned (move cool-down, move budget, board at risk) or kept (admission_keeps.py: a move
would throw away over a GPU-day). Borrowers' jobs (their tenant holds more than its quota of the
type) move first, then lower priorities, then those that lose the least work; units placed
this round, not yet running, before all of them. Destinations are
taken best fit (the node with the fewest free GPUs first), so that whole nodes stay whole.
Not done with topology isolation (its PCIe switch owners would have to be undone).
"""
from collections import defaultdict
from dataclasses import dataclass

from .admission_keeps import borrowing, kept


@dataclass(frozen=True)
class _Holder:
    """A one-GPU unit on a GPU: its jobs (indices) and what moving it costs."""

    gpu: object
    jobs: tuple[int, ...]
    rank: tuple


def free_node_for(packer, j: int, movable: set[int], borrowers: set[tuple[str, str]]) -> int:
    """Place job j (its consolidated multi-GPU choice, which found no node) by moving one-GPU
    units off the node that costs least to free (the fewest units; then the fewest running, the
    fewest not of borrowers, the lowest priorities, the least work lost); the number of units
    moved (0: none could be)."""
    inst, choice = packer.inst, packer.choices[j]
    if packer.isolate or choice is None or choice[0] != "o":
        return 0
    opt = inst.all_options[choice[1]]
    if not (opt.consolidated and opt.num_gpus > 1):
        return 0
    fits = packer.fits(opt.gpu_type, [(opt.tau, inst.jobs[j].min_throughput)])
    holders = _holders(packer, opt.gpu_type, movable, borrowers)
    best = None
    for node, on_node in holders.items():
        need = opt.num_gpus - sum(1 for g in packer.free[opt.gpu_type].get(node, ()) if fits(g))
        movers = sorted((h for h in on_node if fits(h.gpu)), key=lambda h: h.rank)[:max(need, 0)]
        if need <= 0 or len(movers) < need:
            continue
        destinations = _destinations(packer, opt.gpu_type, node, movers)
        key = (need, *(sum(part) for part in zip(*(h.rank for h in movers))), node)
        if destinations is not None and (best is None or key < best[0]):
            best = (key, node, movers, destinations)
    if best is None:
        return 0
    _, node, movers, destinations = best
    for holder, gpu in zip(movers, destinations):
        packer.release([holder.gpu])
        packer.claim([gpu], inst.jobs[holder.jobs[0]].tenant)
        for x in holder.jobs:
            packer.record(x, [gpu])
    gpus = sorted((g for g in packer.free[opt.gpu_type][node] if fits(g)), key=lambda g: (g.slow, g.id))[:opt.num_gpus]
    packer.claim(gpus, inst.jobs[j].tenant)
    packer.record(j, gpus)
    del packer.failed[j]
    return len(movers)


def movable_jobs(inst) -> tuple[set[int], set[tuple[str, str]]]:
    """(jobs whose current run may be moved to another GPU of its type, (tenant, GPU type)
    pairs whose tenant holds more than its quota there)."""
    type_of = {gpu.id: gpu.gpu_type for gpu in inst.problem.gpus}
    held_back = kept(inst)
    movable = {
        j for j, job in enumerate(inst.jobs)
        if not (job.service or job.probe or job.pinned or j in held_back)
    }
    return movable, borrowing(inst, type_of)


def _holders(packer, gpu_type: str, movable: set[int], borrowers) -> dict[str, list[_Holder]]:
    """Node -> the one-GPU units of the type placed there that may move, with their rank."""
    inst = packer.inst
    index = {job.id: j for j, job in enumerate(inst.jobs)}
    on_gpu: dict[str, list[int]] = defaultdict(list)
    for job_id, placement in packer.placements.items():
        if placement.gpu_type == gpu_type and len(placement.gpu_ids) == 1:
            on_gpu[placement.gpu_ids[0]].append(index[job_id])
    out: dict[str, list[_Holder]] = defaultdict(list)
    for gpu_id, jobs in on_gpu.items():
        gpu = packer.gpu_by_id[gpu_id]
        running = [x for x in jobs if _runs_on(inst.jobs[x], gpu_id)]
        if any(x not in movable for x in running):
            continue
        lent = all((inst.jobs[x].tenant, gpu_type) in borrowers for x in running)
        work = sum(inst.jobs[x].work_at_risk for x in running)
        rank = (bool(running), not lent, max((inst.jobs[x].priority for x in running), default=0), work)
        out[gpu.node].append(_Holder(gpu, tuple(jobs), rank))
    return out


def _runs_on(job, gpu_id: str) -> bool:
    return job.current is not None and gpu_id in job.current.gpu_ids


def _destinations(packer, gpu_type: str, node: str, movers: list[_Holder]) -> list | None:
    """A free GPU of the type on another node for each mover (best fit, fast boards first, where
    its jobs' planned rates hold), or None where one finds none."""
    inst, taken, out = packer.inst, set(), []
    others = sorted((n for n in packer.free[gpu_type] if n != node), key=lambda n: (len(packer.free[gpu_type][n]), n))
    for holder in movers:
        fits = packer.fits(gpu_type, [(packer.tau(x), inst.jobs[x].min_throughput) for x in holder.jobs])
        found = next((g for slow in (False, True) for n in others for g in packer.free[gpu_type][n]
                      if g.slow == slow and g.id not in taken and fits(g)), None)
        if found is None:
            return None
        taken.add(found.id)
        out.append(found)
    return out
