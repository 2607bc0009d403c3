"""Gavel-format traces (../shared/data/gavel/traces, copied to catalog/reference/gavel/traces):
tab-separated lines of job_type, command, working_directory, num_steps_arg, needs_data_dir,
total_steps, scale_factor, priority_weight, SLO, arrival_time_s.

A trace fixes each job's workload, total steps, GPUs (scale_factor = D_j) and arrival; the
command, directories, priority weight and SLO are Gavel's and not used. T_min is drawn as for
generated jobs (jobs.py), from the seed.
"""
import math
import random

from .jobs import MAX_ARRIVAL_S, SimJob, best_measured, min_throughput
from .truth import Truth

FIELDS = 10


class TraceError(ValueError):
    """A trace line that is not Gavel's format; str() is `file:line: reason`."""


def parse_trace(path: str) -> list[tuple[int, str, float, int, float]]:
    """(line, workload, total_steps, scale_factor, arrival_s) per job, blank lines skipped. A
    byte-order mark (editors on Windows write one) is not part of the first workload's name."""
    try:
        with open(path, encoding="utf-8-sig") as handle:
            lines = handle.read().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise TraceError(f"{path}: cannot read the trace ({exc})") from None
    out = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != FIELDS:
            raise TraceError(f"{path}:{number}: expected {FIELDS} tab-separated fields, found {len(fields)}")
        try:
            steps, scale, arrival = float(fields[5]), int(fields[6]), float(fields[9])
        except ValueError:
            raise TraceError(f"{path}:{number}: total_steps, scale_factor and arrival_time_s must be numbers") from None
        if not (math.isfinite(steps) and steps > 0 and scale >= 1 and math.isfinite(arrival) and arrival >= 0):
            raise TraceError(f"{path}:{number}: needs total_steps > 0, scale_factor >= 1 and arrival_time_s >= 0")
        if arrival > MAX_ARRIVAL_S:
            raise TraceError(f"{path}:{number}: arrival_time_s {arrival:g} is beyond the simulation's horizon "
                             f"({MAX_ARRIVAL_S:g} s, a year)")
        out.append((number, fields[0].strip(), steps, scale, arrival))
    if not out:
        raise TraceError(f"{path}: the trace has no jobs")
    return out


def trace_jobs(path: str, truth: Truth, *, seed: int, tmin_range=(0.2, 0.6)) -> tuple[SimJob, ...]:
    """Jobs of a trace; TraceError for a workload the truth cannot run on its GPUs."""
    rng = random.Random(f"trace:{seed}")
    jobs = []
    for n, (line, workload, steps, gpus, arrival) in enumerate(parse_trace(path)):
        if best_measured(truth, workload, gpus) <= 0:
            raise TraceError(f"{path}:{line}: no measured throughput of {workload!r} on up to {gpus} GPUs "
                             "in the truth data")
        jobs.append(
            SimJob(f"job-{n}", workload, arrival, gpus, steps, min_throughput(truth, workload, gpus, rng, tmin_range))
        )
    return tuple(sorted(jobs, key=lambda j: (j.arrival_s, int(j.id[4:]))))
