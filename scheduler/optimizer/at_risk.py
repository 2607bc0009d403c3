"""Boards at risk out of the capacity new work is planned on (docs/gpu_health.md).

A board at risk (GpuSpec.at_risk: its error counts rose, or it reported a failing XID) is
expected to fail, so it takes no new job, like a drained node: placement never packs a job onto
it, and the aggregated model does not count it as capacity, so the ILP plans no new work for room
that placement would then refuse (counted and refused, jobs found no GPUs for their chosen
configuration and took another, or waited). The jobs already on it stay until their leave
(keep_work.py: at their next checkpoint they are `leaving`; until then `pinned`), so a board at
risk counts as capacity only while a job runs on it, for that job: pinned, it keeps its
configuration and placement keeps it there; leaving, it is packed on the other boards, and where
none has room it stays, placement's last resort, on the room the model counted for it (not
counted, a leaving job with no other room was dropped from the plan, its work thrown away).
The round a job leaves, the model may plan another job into the room it left, which placement
then refuses (that job takes another configuration, or waits a round).
"""
from .problem import GpuSpec, JobSpec


def capacity_gpus(gpus: tuple[GpuSpec, ...], jobs: tuple[JobSpec, ...]) -> tuple[GpuSpec, ...]:
    """The boards the model counts as capacity: every board not at risk, and a board at risk
    while a job runs there."""
    held = {g for job in jobs if job.current is not None for g in job.current.gpu_ids}
    return tuple(g for g in gpus if not g.at_risk or g.id in held)


def takes_new_work(gpu: GpuSpec) -> bool:
    """Whether placement may put a job onto the board that is not on it already."""
    return not gpu.at_risk
