"""The latency model: the P99 of a replica's requests from its predicted speed and its load.

A replica answers requests in batches of `batch_size`: one batch is one step, so a replica at
`steps_per_s` serves mu = steps_per_s * batch_size requests per second and takes 1/steps_per_s
seconds per batch. Requests arrive at lambda per second (Poisson). The P99 is modelled as one
batch's time plus the 99th percentile of an M/M/1 queue's wait on the request rate:

    P99 = c * (1 / steps_per_s + ln(100) / (mu - lambda))        (mu > lambda; else unbounded)

`c`, the calibration, starts at 1 and follows the ratio of the P99 the service reports to the
one the model predicted for the same load (calibrated()), so a service whose batching or
serving stack is slower or faster than the model learns it. The model is monotone in
steps_per_s, which makes the inverse (required_steps_per_s) a bisection.

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
    if steps_per_s <= 0:
        return math.inf
    service_rps = steps_per_s * batch_size
    if service_rps <= arrival_rps:
        return math.inf
    seconds = 1.0 / steps_per_s + LN_100 / (service_rps - max(arrival_rps, 0.0))
    return 1000.0 * calibration * seconds


def target_ms(bound_ms: float, margin: float) -> float:
    """The P99 a round plans for: the bound less the SLO margin."""
    return bound_ms / (1.0 + max(margin, 0.0))


def required_steps_per_s(
    arrival_rps: float, bound_ms: float, batch_size: int, calibration: float = 1.0, margin: float = 0.0,
) -> float:
    """The least steps per second at which one replica receiving `arrival_rps` keeps its
    modelled P99 under target_ms(bound_ms, margin): the replica's T_min."""
    target = target_ms(bound_ms, margin)
    if target <= 0:
        return math.inf
    # Without load the P99 is c * (1 + ln(100) / batch) / steps_per_s: a lower bound on the speed.
    low = calibration * (1.0 + LN_100 / batch_size) * 1000.0 / target
    low = max(low, arrival_rps / batch_size)
    high = max(low * 2.0, 1e-9)
    while p99_ms(high, arrival_rps, batch_size, calibration) > target:
        high *= 2.0
    for _ in range(60):
        mid = (low + high) / 2.0
        if p99_ms(mid, arrival_rps, batch_size, calibration) > target:
            low = mid
        else:
            high = mid
        if high - low <= 1e-9 * high:
            break
    return high


def unloaded_floor_ms(steps_per_s: float, batch_size: int, calibration: float = 1.0) -> float:
    """The modelled P99 with no load at all: what a bound must at least allow on a GPU that
    gives `steps_per_s` (a bound below it on every type is refused at submission)."""
    return p99_ms(steps_per_s, 0.0, batch_size, calibration)


def calibrated(calibration: float, predicted_ms: float, observed_ms: float) -> float:
    """The calibration after a report: smoothed towards observed / (predicted without c), kept
    within CALIBRATION_BOUNDS; unchanged when either figure is missing or not finite."""
    if not (math.isfinite(predicted_ms) and math.isfinite(observed_ms)) or predicted_ms <= 0 or observed_ms <= 0:
        return calibration
    raw = predicted_ms / max(calibration, 1e-9)
    ratio = observed_ms / raw
    value = (1.0 - CALIBRATION_ALPHA) * calibration + CALIBRATION_ALPHA * ratio
    low, high = CALIBRATION_BOUNDS
    return min(max(value, low), high)
