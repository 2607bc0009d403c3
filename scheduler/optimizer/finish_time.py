"""Finish-time fairness (Themis, Mahajan et al., NSDI 2020; Gavel's FTF policy) as the
optimiser sees a job before it ends: its expected rho, the time it will have spent in the
shared cluster over the time it would take with 1/n of the cluster,

    rho = (elapsed + remaining / T_min) / (total_steps / fair_rate)

with T_min as its pace from now on (the rate `gogh` promises it, so rho is what the promise
alone gives: a job held to T_min on slow GPUs, or left waiting, grows it) and fair_rate its
predicted throughput with 1/n of every type's GPUs (Gavel's X_equal, on the GPUs within D_j
that the predictions call fastest on each type). Within a priority level, jobs whose rho
stands above the level's lowest are admitted first (admission.py). The control plane
(problem_source) and the simulator compute it with these functions.
"""
import math
from collections.abc import Mapping

from .gavel import GavelJob, equal_share_throughput
from .problem import Predictions

SIZES = (1, 2, 4, 8)


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


def expected_rho(elapsed_s: float, remaining_steps: float, total_steps: float, min_throughput: float,
                 fair: float) -> float:
    """The job's rho if it runs at its T_min from now on; 1.0 where it cannot be told (no
    steps known, no fair rate or no T_min), as every job's is when nothing is known."""
    if not 0 < total_steps < math.inf or fair <= 0 or min_throughput <= 0:
        return 1.0
    return (max(elapsed_s, 0.0) + max(remaining_steps, 0.0) / min_throughput) / (total_steps / fair)


#: A job whose expected rho is above this is planned faster (planned_min_throughput).
RHO_BOUND = 2.0


def planned_min_throughput(elapsed_s: float, remaining_steps: float, total_steps: float, min_throughput: float,
                           fair: float, reach: float = math.inf, bound: float = RHO_BOUND) -> float:
    """The floor the round plans the job at: its T_min, or where its expected rho is above
    `bound`, the pace that brings rho back to it (Gavel's FTF constraint, remaining / (bound x
    isolated - elapsed)), at most its fair rate (1/n of the cluster is never faster than the
    job's best type) and `reach`, the best it is predicted to reach on the GPUs it may hold
    without borrowing (its tenant's quota types, or every type where it has none): a floor only
    borrowed GPUs meet would keep it waiting. Never below T_min."""
    if expected_rho(elapsed_s, remaining_steps, total_steps, min_throughput, fair) <= bound:
        return min_throughput
    room = bound * total_steps / fair - max(elapsed_s, 0.0)
    needed = remaining_steps / room if room > 0 else fair
    return max(min_throughput, min(needed, fair, reach))


def quota_types(quotas) -> dict[str, set[str]]:
    """Tenant -> the GPU types it has a quota on (QuotaSpec), for planned_min_throughput's reach."""
    out: dict[str, set[str]] = {}
    for q in quotas:
        if q.gpus > 0:
            out.setdefault(q.tenant, set()).add(q.gpu_type)
    return out
