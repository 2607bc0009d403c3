"""Finish-time fairness (Themis, Mahajan et al., NSDI 2020; Gavel's FTF policy) as the
optimiser sees a job before it ends, and the pace that keeps it fair.

A job's rho is its time in the shared cluster over its time with 1/n of the cluster (its
fair rate: Gavel's X_equal, on the GPUs within D_j that the predictions call fastest on each
type). `gogh` promises T_min and runs jobs near it on the cheapest GPUs, so a job whose fair
rate is far above its T_min ends at a large rho even if it never waits. Its **pace** is the
rate that, from now to its end, brings its rho to PACE_RHO:

    pace = remaining / (PACE_RHO x total_steps / fair_rate - elapsed)

(its best predicted rate where that is out of reach; 0 while its T_min is enough). The pace is
self-consistent: a job that runs at its pace needs the same pace at the next round, so it is
not dropped back to T_min once it catches up a little and moved to the cheapest GPU again.

The pace is no constraint: admission stays first (every admitted job keeps its T_min, never
another's), and in the power phase each option of a job with a pace is worth up to
PACE_VALUE_W (at the round's energy weight, at least 1) in proportion to the part of the way
from T_min to its pace that its predicted throughput covers (feasibility.option_cost). So a job
behind is sped up with the capacity and power that the admitted jobs' T_min leave, and an
option only faster than the pace is worth no more. The control plane (problem_source) and
the simulator compute the pace with these functions.

Paces are for a cluster shared by tenants (`shared_by_tenants`: two or more): finish-time
fairness is what a team gives up to the others by sharing. With one tenant, T_min is the whole
promise and the energy objective decides alone (a paced training job would also leave the
replica whose GPU it shares to save energy, docs/services.md).
"""
import math
from collections.abc import Mapping

from .gavel import GavelJob, equal_share_throughput
from .problem import Predictions

SIZES = (1, 2, 4, 8)
#: The rho a job's pace aims at: below 1.2 x the 1.83 Gavel's FTF policy reaches in the busy
#: multi-tenant scenario (issue 19's bound, 2.2), since the fair rate is planned with the jobs
#: in the system now and measured with their mean over the job's time.
PACE_RHO = 2.0
#: Watts (at the round's energy weight, at least 1) that reaching its pace is worth to a job:
#: above the power of one V100 over a K80 (about 140 W), so a single-GPU job behind moves to a
#: faster type where one is free; a job that needs several more GPUs gets them only in part.
PACE_VALUE_W = 400.0


def shared_by_tenants(tenants: int) -> bool:
    """Whether jobs get paces: the cluster has two tenants or more (see the module's text)."""
    return tenants > 1


def fair_rate(predictions: Predictions, workload: str, max_gpus: int, capacity: Mapping[str, int], n: float) -> float:
    """Predicted steps/s of the job with 1/n of the cluster (`capacity`: GPUs per type; 0: unknown
    everywhere): on each type the size within D_j with the highest predicted throughput."""
    gpus, rates = {}, {}
    for g in capacity:
        gpus[g], rates[g] = _best_size(predictions, workload, max_gpus, g)
    return equal_share_throughput(GavelJob(workload, gpus, rates), capacity, n)


def best_rate(predictions: Predictions, workload: str, max_gpus: int, gpu_types) -> float:
    """The highest predicted steps/s of the job within D_j on any of `gpu_types` (0: none known)."""
    return max((_best_size(predictions, workload, max_gpus, g)[1] for g in gpu_types), default=0.0)


def _best_size(predictions: Predictions, workload: str, max_gpus: int, gpu_type: str) -> tuple[int, float]:
    rate, k = max(((predictions.tau(workload, gpu_type, k, True) or 0.0, -k) for k in SIZES if k <= max_gpus),
                  default=(0.0, -1))
    return -k, rate


def pace(elapsed_s: float, remaining_steps: float, total_steps: float, min_throughput: float, fair: float,
         best: float, bound: float = PACE_RHO) -> float:
    """The steps/s that bring the job's rho to `bound` at its end (see the module's text), at
    most `best` (its fastest predicted rate): `best` where the bound is out of reach, 0 while
    its T_min is enough or where rho cannot be told (no steps known, no fair rate)."""
    if not 0 < total_steps < math.inf or fair <= 0 or min_throughput <= 0 or remaining_steps <= 0:
        return 0.0
    room = bound * total_steps / fair - max(elapsed_s, 0.0)
    needed = remaining_steps / room if room > 0 else math.inf
    if needed <= min_throughput:
        return 0.0
    return min(needed, best) if best > min_throughput else 0.0


def job_pace(predictions: Predictions, capacity: Mapping[str, int], n: float, *, workload: str, max_gpus: int,
             min_throughput: float, elapsed_s: float, remaining_steps: float, total_steps: float) -> float:
    """A job's pace from the round's predictions, with 1/n of `capacity` as its fair share: the one
    computation of the control plane (problem_source) and the simulator."""
    return pace(elapsed_s, remaining_steps, total_steps, min_throughput,
                fair_rate(predictions, workload, max_gpus, capacity, n),
                best_rate(predictions, workload, max_gpus, capacity))


def pace_value(min_throughput: float, job_pace: float, tau: float) -> float:
    """The share of PACE_VALUE_W an option of predicted throughput `tau` earns: the part of the
    way from T_min to the pace it covers (0 below T_min or without a pace, 1 at the pace or
    above)."""
    if job_pace <= min_throughput or tau <= min_throughput:
        return 0.0
    return min((tau - min_throughput) / (job_pace - min_throughput), 1.0)
