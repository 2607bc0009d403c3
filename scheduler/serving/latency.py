"""The latency model: the P99 of a replica's requests from its predicted speed and its load.

A replica answers requests in batches of `batch_size`: one batch is one step, so a replica at
`steps_per_s` serves mu = steps_per_s * batch_size requests per second and takes 1/steps_per_s
seconds per batch. Requests arrive at lambda per second (Poisson). The P99 is modelled as one
batch's time plus the 99th percentile of an M/M/1 queue's wait on the request rate:

    P99 = c / steps_per_s + ln(100) / (mu / c - lambda)        (mu > c * lambda; else unbounded)

`c`, the calibration, starts at 1 and is learnt from the P99 the service reports (calibrated()):
the calibration at which the model gives that P99 at the same speed and load, smoothed. It is a
slowdown of the replica (a batch takes c / steps_per_s), so it lowers the replica's capacity
(mu / c) too, not only its batch time: the model cannot tell a serving stack slower than it from
a GPU slower than predicted, and a P99 above the model's that was read as overhead on the batch
alone kept the capacity the prediction promised. In `simulate` (seed 3) the recommendation
service (batches of 512, a 50 ms bound) ran one replica predicted at 42 steps/s on a P100 (21500
requests/s) whose truth was 33 (17100): the calibration rose to 1.6 and the model still put the
P99 at 40 ms for 17000 requests/s, where the truth's queue never drained. The model is monotone
in steps_per_s, which makes the inverse (required_steps_per_s) a bisection.

The SLO holds with a margin: a round plans for P99 <= L / (1 + margin), so that co-location is
allowed only where the service's predicted P99, slowed by its partner (P1/P2's co-location
fraction times its speed alone), stays that far under the bound: the optimiser sees this as
the replica's T_min, which every member of a shared GPU must meet.
"""
import math

LN_100 = math.log(100.0)
#: The calibration stays within these bounds (a report from a service under a
#: burst, or with a cold cache, must not make the model promise or refuse everything).
CALIBRATION_BOUNDS = (0.2, 5.0)
#: Weight of the newest report's ratio in the calibration (exponential smoothing).
CALIBRATION_ALPHA = 0.3
#: The SLO margin a round plans with unless the operator sets another (SolverConfig.service_latency_margin).
DEFAULT_MARGIN = 0.2


def p99_ms(steps_per_s: float, arrival_rps: float, batch_size: int, calibration: float = 1.0) -> float:
    """The modelled P99 latency in ms of one replica at `steps_per_s` receiving `arrival_rps`;
    math.inf when it cannot keep up (or has no speed)."""
    if steps_per_s <= 0 or calibration <= 0:
        return math.inf
    speed = steps_per_s / calibration
    service_rps = speed * batch_size
    if service_rps <= arrival_rps:
        return math.inf
    return 1000.0 * (1.0 / speed + LN_100 / (service_rps - max(arrival_rps, 0.0)))


def target_ms(bound_ms: float, margin: float) -> float:
    """The P99 a round plans for: the bound less the SLO margin."""
    return bound_ms / (1.0 + max(margin, 0.0))


def required_steps_per_s(
    arrival_rps: float, bound_ms: float, batch_size: int, calibration: float = 1.0, margin: float = 0.0,
) -> float:
    """The least steps per second at which one replica receiving `arrival_rps` keeps its
    modelled P99 under target_ms(bound_ms, margin): the replica's T_min (c times the speed an
    uncalibrated replica would need, as c slows the replica)."""
    target = target_ms(bound_ms, margin)
    if target <= 0:
        return math.inf
    # Without load the P99 is (1 + ln(100) / batch) / speed: a lower bound on the speed.
    low = max((1.0 + LN_100 / batch_size) * 1000.0 / target, arrival_rps / batch_size)
    high = max(low * 2.0, 1e-9)
    while p99_ms(high, arrival_rps, batch_size) > target:
        high *= 2.0
    for _ in range(60):
        mid = (low + high) / 2.0
        if p99_ms(mid, arrival_rps, batch_size) > target:
            low = mid
        else:
            high = mid
        if high - low <= 1e-9 * high:
            break
    return calibration * high


def unloaded_floor_ms(steps_per_s: float, batch_size: int, calibration: float = 1.0) -> float:
    """The modelled P99 with no load at all: what a bound must at least allow on a GPU that
    gives `steps_per_s` (a bound below it on every type is refused at submission)."""
    return p99_ms(steps_per_s, 0.0, batch_size, calibration)


def calibrated(calibration: float, steps_per_s: float, arrival_rps: float, batch_size: int,
               observed_ms: float) -> float:
    """The calibration after a replica at `steps_per_s` (predicted) receiving `arrival_rps`
    reported `observed_ms`: smoothed towards the calibration at which the model gives that P99
    (observed_calibration), kept within CALIBRATION_BOUNDS; unchanged without a speed or a P99."""
    seen = observed_calibration(steps_per_s, arrival_rps, batch_size, observed_ms)
    if seen is None:
        return calibration
    value = (1.0 - CALIBRATION_ALPHA) * calibration + CALIBRATION_ALPHA * seen
    low, high = CALIBRATION_BOUNDS
    return min(max(value, low), high)


def observed_calibration(steps_per_s: float, arrival_rps: float, batch_size: int, observed_ms: float) -> float | None:
    """The calibration at which p99_ms gives `observed_ms` (a bisection: the P99 rises with c),
    within CALIBRATION_BOUNDS. An unbounded P99 (the queue never drains) says the replica's
    capacity is at most its load: c at least steps_per_s x batch / arrival_rps. None without a
    speed or a P99."""
    if steps_per_s <= 0 or math.isnan(observed_ms) or observed_ms <= 0:
        return None
    low, high = CALIBRATION_BOUNDS
    if arrival_rps > 0:  # above this c the replica cannot keep up
        high = min(high, steps_per_s * batch_size / arrival_rps)
    if not math.isfinite(observed_ms) or high <= low:
        return max(high, low)
    for _ in range(60):
        mid = (low + high) / 2.0
        if p99_ms(steps_per_s, arrival_rps, batch_size, mid) > observed_ms:
            high = mid
        else:
            low = mid
    return (low + high) / 2.0
