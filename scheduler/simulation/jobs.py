"""Jobs of a scenario: drawn like Gavel's generator, or read from a Gavel trace (trace.py).

Generated jobs arrive as a Poisson process; the workload is drawn uniformly from the truth's
workloads; GPUs (D_j) are 1, 2, 4 or 8 with probability 0.70, 0.10, 0.15, 0.05; the duration
is 60 x 10^U(1.5, 3) s with probability 0.8 and 60 x 10^U(3, 4) s otherwise (Gavel's
generator), and total_steps = duration x the job's reference throughput: the measured
steps/s of the workload on D_j V100s (in one server if they fit in one, else spread; else its
fastest measured configuration within D_j). T_min is a fraction U(tmin_low, tmin_high) of the
job's best measured throughput within D_j on the cluster's servers (what its owner could ask
for, knowing the catalog).
"""
import random
from dataclasses import dataclass

from .cluster import GPUS_PER_SERVER
from .truth import Truth

GPU_COUNTS = ((1, 0.70), (2, 0.10), (4, 0.15), (8, 0.05))
REFERENCE_TYPE = "v100"
#: Every job arrives within a year of the start. The virtual clock is a float: far enough out
#: (1e308 s) a 360 s round adds nothing to it, and a job arriving there could never progress, so
#: it would show up as "not completed" instead of as the mistake it is. A year is ~680 times the
#: latest arrival in Gavel's traces (46317 s).
MAX_ARRIVAL_S = 365 * 86400.0


@dataclass(frozen=True)
class SimJob:
    id: str
    workload: str
    arrival_s: float
    max_gpus: int  # D_j
    total_steps: float
    min_throughput: float  # T_min, steps/s
    checkpoint_interval_s: float | None = None  # seconds of training between checkpoints; None: never (checkpoints.py)
    tenant: str = "default"  # the multi-tenant scenario's tenant (tenants.py); the default scenario has one
    service: str | None = None  # a replica of this service (serving.py); None: a training job


def gavel_duration_s(rng: random.Random) -> float:
    if rng.random() < 0.8:
        return 60.0 * 10 ** rng.uniform(1.5, 3.0)
    return 60.0 * 10 ** rng.uniform(3.0, 4.0)


def draw_gpu_count(rng: random.Random) -> int:
    x, acc = rng.random(), 0.0
    for count, p in GPU_COUNTS:
        acc += p
        if x < acc:
            return count
    return GPU_COUNTS[-1][0]


def best_measured(truth: Truth, workload: str, max_gpus: int, per_server: int = GPUS_PER_SERVER) -> float:
    """Fastest measured throughput of the workload within D_j GPUs on the cluster's servers:
    any type, in one server where it fits in one, spread otherwise."""
    return max(
        (
            truth.measured_tau(workload, t, k, k <= per_server)
            for t in truth.gpu_types for k in (1, 2, 4, 8) if k <= max_gpus
        ),
        default=0.0,
    )


def reference_rate(truth: Truth, workload: str, max_gpus: int) -> float:
    rate = truth.measured_tau(workload, REFERENCE_TYPE, max_gpus, max_gpus <= GPUS_PER_SERVER)
    return rate or best_measured(truth, workload, max_gpus)


def min_throughput(truth: Truth, workload: str, max_gpus: int, rng: random.Random, tmin_range) -> float:
    return best_measured(truth, workload, max_gpus) * rng.uniform(*tmin_range)


def generate_jobs(truth: Truth, *, count: int, jobs_per_hour: float, seed: int,
                  tmin_range=(0.2, 0.6)) -> tuple[SimJob, ...]:
    """`count` jobs; a (workload, D_j) draw that fits nowhere is drawn again. ValueError when
    arrivals at this rate run past MAX_ARRIVAL_S."""
    rng = random.Random(f"jobs:{seed}")
    workloads = truth.workloads()
    jobs, t = [], 0.0
    while len(jobs) < count:
        t += rng.expovariate(jobs_per_hour / 3600.0)
        if t > MAX_ARRIVAL_S:
            raise ValueError(f"at {jobs_per_hour:g} jobs per hour job {len(jobs) + 1} of {count} would arrive after "
                             f"{t / 86400:.0f} days, beyond the simulation's horizon of "
                             f"{MAX_ARRIVAL_S / 86400:.0f} days")
        while True:
            workload, gpus = rng.choice(workloads), draw_gpu_count(rng)
            rate = reference_rate(truth, workload, gpus)
            if rate > 0:
                break
        duration = gavel_duration_s(rng)
        jobs.append(SimJob(f"job-{len(jobs)}", workload, round(t, 3), gpus, duration * rate,
                           min_throughput(truth, workload, gpus, rng, tmin_range)))
    return tuple(jobs)
