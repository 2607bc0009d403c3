"""Each GPU's own speed, learnt from the throughput its jobs measured, each against the other
boards' of its type in the same cell (telemetry.gpu_speed.Cell; docs/gpu_health.md).

The tracker's state is not stored: every refresh replays the newest measurements of jobs
(JobMeasurement, at most MAX_MEASUREMENTS of them, oldest first) through a fresh
telemetry.gpu_speed.SpeedTracker, and telemetry writes the result onto the Gpu rows. Replaying
is deterministic, so the learnt speeds follow from what is stored, and the per-(workload, type)
baseline the tracker subtracts is recomputed from the same measurements each time.

A measurement of a job on n GPUs counts once for each of them (data-parallel steps wait for the
slowest board, so each of them is seen at that pace), on the allocations open when it was
observed, in its cell: the measurement's workload, type, GPUs, layout and partner, and the power
limit its round set (Allocation.power_limit_w; the measurement is brought back to the default
by the limit's learnt fraction, which is the same for every board in the cell).
"""
from django.db.models import Q

from telemetry.gpu_speed import Cell, SpeedTracker
from telemetry.services import gpu_speeds_write

from .models import Allocation, JobMeasurement

#: The newest job measurements replayed per refresh (at 1 per job per 5 minutes, days of a busy cluster).
MAX_MEASUREMENTS = 20000


def speed_observations(*, limit: int = MAX_MEASUREMENTS) -> list[tuple[tuple[str, ...], Cell, float]]:
    """(GPU ids, cell, measured) of each of the newest `limit` job measurements, oldest first,
    on the job's GPUs of its type open at its instant; one with none is left out. Two queries."""
    links = list(
        JobMeasurement.objects.order_by("-measurement__observed_at", "-measurement_id").values_list(
            "job_id", "measurement__observed_at", "measurement__workload__name", "measurement__gpu_type__name",
            "measurement__num_gpus", "measurement__consolidated", "measurement__partner__name",
            "measurement__throughput",
        )[:limit]
    )
    if not links:
        return []
    oldest = links[-1][1]
    # The jobs as a subquery, not thousands of parameters (SQLite caps them); spans ended before
    # the oldest measurement cannot hold one.
    allocations = Allocation.objects.filter(
        Q(end__isnull=True) | Q(end__gt=oldest), job_id__in=JobMeasurement.objects.values("job_id"),
    ).order_by("job_id", "gpu_id")
    spans: dict[int, list[tuple]] = {}
    for job_id, *span in allocations.values_list(
        "job_id", "gpu_id", "gpu__gpu_type__name", "start", "end", "power_limit_w"
    ):
        spans.setdefault(job_id, []).append(span)
    out = []
    for job_id, observed_at, workload, gpu_type, num_gpus, consolidated, partner, measured in reversed(links):
        held = [(str(gpu_id), limit_w) for gpu_id, allocation_type, start, end, limit_w in spans.get(job_id, ())
                if allocation_type == gpu_type and start <= observed_at and (end is None or observed_at < end)]
        if held:
            limit_w = min((w for _, w in held if w is not None), default=None)  # the slowest board's pace
            out.append((tuple(g for g, _ in held), Cell(workload, gpu_type, num_gpus, consolidated, partner, limit_w),
                        measured))
    return out


def gpu_speeds_refresh() -> int:
    """Replay the measurements and write each observed GPU's speed and flag; how many GPU rows changed."""
    tracker, seen = SpeedTracker(), set()
    for gpu_ids, cell, measured in speed_observations():
        if tracker.observe(gpu_ids, cell, measured):
            seen.update(int(g) for g in gpu_ids)
    return gpu_speeds_write(tracker=tracker, gpu_ids=seen)
