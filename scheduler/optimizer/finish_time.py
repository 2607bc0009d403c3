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
        best = max(((predictions.tau(workload, g, k, True) or 0.0, -k) for k in SIZES if k <= max_gpus),
                   default=(0.0, -1))
        gpus[g], rates[g] = -best[1], best[0]
    return equal_share_throughput(GavelJob(workload, gpus, rates), capacity, n)


def expected_rho(elapsed_s: float, remaining_steps: float, total_steps: float, min_throughput: float,
                 fair: float) -> float:
    """The job's rho if it runs at its T_min from now on; 1.0 where it cannot be told (no
    steps known, no fair rate or no T_min), as every job's is when nothing is known."""
    if not 0 < total_steps < math.inf or fair <= 0 or min_throughput <= 0:
        return 1.0
    return (max(elapsed_s, 0.0) + max(remaining_steps, 0.0) / min_throughput) / (total_steps / fair)
