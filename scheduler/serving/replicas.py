"""How many replicas a service runs, and the steps per second each must give (its T_min).

Requests are spread evenly over the replicas. A round plans for the rate it is given times
(1 + RATE_HEADROOM): the latency margin alone left a service with large batches (whose P99 is
mostly one batch's time) planned at ~97 % of its replicas' capacity in `simulate`, where a 5 %
error in speed or rate is a queue that never drains (11 % of its minutes violated). The plan is
the fewest replicas within
[min, max] at which each replica's T_min (latency.required_steps_per_s at rate / replicas) is
at most UTILIZATION_TARGET of the fastest single-GPU speed predicted for the service's workload
on any GPU type: fewer replicas use fewer GPUs, and the headroom leaves room for the forecast
to be wrong and for a training partner's slowdown. When even `max_replicas` cannot, the plan is
`max_replicas` with a reason (the service runs, but its SLO is at risk, and says so), each
replica's T_min capped at UTILIZATION_TARGET x the fastest speed a GPU is counted on to give
(surest_single_gpu): above it no GPU takes the replicas, they never report, and the calibration
that made the plan impossible could never learn otherwise (`simulate` saw a calibration of 2.39
stuck for 38 hours with the cap at the bare fastest prediction, and, seed 3, of 2.29 for 16 hours
at the fastest prediction that a board's learnt speed had lowered in the optimiser's eyes).
"""
from dataclasses import dataclass

from scheduler.optimizer import feasibility

from .latency import required_steps_per_s

#: A replica is planned to need at most this share of the fastest GPU's speed.
UTILIZATION_TARGET = 0.85
#: The rate a plan serves, over the rate it is given (the forecast).
RATE_HEADROOM = 0.2


def fastest_single_gpu(predictions, workload: str, gpu_types) -> tuple[str, float] | None:
    """(GPU type, steps/s) of the fastest predicted single-GPU speed of `workload` over
    `gpu_types` (ties: the first name); None when no type has a prediction. What a plan's
    `best_steps_per_s` is, in the control plane and in `simulate`."""
    speeds = [(gpu_type, predictions.tau(workload, gpu_type, 1, True) or 0.0) for gpu_type in gpu_types]
    speeds = [(gpu_type, tau) for gpu_type, tau in speeds if tau > 0]
    return min(speeds, key=lambda item: (-item[1], item[0])) if speeds else None


def surest_single_gpu(predictions, workload: str, gpu_types, settings) -> float | None:
    """The fastest single-GPU speed of `workload` a replica may count on for its T_min on any of
    `gpu_types`: the prediction times the optimiser's share for an unmeasured configuration
    (feasibility.margin; `settings`: the round's SolverSettings); None when no type has one. A
    plan that cannot meet its SLO caps its replicas' T_min here: at the bare fastest prediction,
    on a type the workload never ran on, no GPU took them, no replica reported, and what the
    calibration had learnt could never be unlearnt (`simulate`, seed 3: the recommendation
    service unserved for 15 hours)."""
    counted = []
    for gpu_type in gpu_types:
        tau = predictions.tau(workload, gpu_type, 1, True) or 0.0
        if tau > 0:
            doubt = feasibility.uncertainty(predictions, workload, gpu_type, 1, True)
            counted.append(tau * feasibility.margin(*doubt, settings))
    return max(counted) if counted else None


@dataclass(frozen=True)
class ReplicaPlan:
    replicas: int
    steps_per_s: float  # T_min of each replica
    rate_per_replica_rps: float
    reason: str = ""  # empty: the plan meets the SLO on the fastest type with the headroom


def plan_replicas(
    *, rate_rps: float, bound_ms: float, batch_size: int, min_replicas: int, max_replicas: int,
    best_steps_per_s: float | None, calibration: float = 1.0, speed_factor: float = 1.0, margin: float = 0.0,
    cap_steps_per_s: float | None = None, hold_rps: float | None = None,
) -> ReplicaPlan:
    """The plan for `rate_rps`; `best_steps_per_s`: the fastest predicted single-GPU speed of
    the workload on any type (None: unknown, the minimum replicas are planned); `calibration`
    and `speed_factor`: latency.Calibration's latency and speed (a replica truly gives
    speed_factor x its predicted speed, so its T_min in predicted steps/s is what it truly
    needs over that); `cap_steps_per_s`: the fastest speed a GPU is counted on to give
    (surest_single_gpu; None: `best_steps_per_s`), of which a plan that cannot meet the SLO even
    with `max_replicas` asks UTILIZATION_TARGET at most; `hold_rps`: the highest recent rate
    (forecast.held_rate), whose replicas the plan keeps, each at the T_min of `rate_rps`."""
    if hold_rps is not None and hold_rps > rate_rps:
        held = plan_replicas(
            rate_rps=hold_rps, bound_ms=bound_ms, batch_size=batch_size, min_replicas=min_replicas,
            max_replicas=max_replicas, best_steps_per_s=best_steps_per_s, calibration=calibration,
            speed_factor=speed_factor, margin=margin, cap_steps_per_s=cap_steps_per_s,
        )
        min_replicas = max(min_replicas, held.replicas)

    def plan(n: int, reason: str = "") -> ReplicaPlan:
        per = max(rate_rps, 0.0) * (1.0 + RATE_HEADROOM) / n
        need = required_steps_per_s(per, bound_ms, batch_size, calibration, margin) / speed_factor
        return ReplicaPlan(n, need, per, reason)

    if not best_steps_per_s or best_steps_per_s <= 0:
        return plan(
            min_replicas, "no GPU type has a predicted speed for this workload: planned at its minimum replicas"
        )
    for n in range(min_replicas, max_replicas + 1):
        candidate = plan(n)
        if candidate.steps_per_s <= UTILIZATION_TARGET * best_steps_per_s:
            return candidate
    last = plan(max_replicas)
    # Below the speed counted on by the headroom too: the optimiser plans a type at its slowest
    # board's learnt speed (optimizer/board_speeds.py), which a T_min at the bare prediction misses.
    cap = UTILIZATION_TARGET * min(cap_steps_per_s or best_steps_per_s, best_steps_per_s)
    capped = last.steps_per_s > cap
    return ReplicaPlan(
        last.replicas, cap if capped else last.steps_per_s, last.rate_per_replica_rps,
        f"at {rate_rps:.1f} requests/s even {max_replicas} replicas need {last.steps_per_s:.2f} steps/s each "
        f"for P99 <= {bound_ms:g} ms; the fastest GPU type is predicted at {best_steps_per_s:.2f}"
        + (f"; they are planned at {cap:.2f}, the most a GPU is counted on to give" if capped else ""),
    )
