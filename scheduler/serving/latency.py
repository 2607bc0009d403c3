"""The latency model: the P99 of a replica's requests from its predicted speed and its load.

A replica answers requests in batches of `batch_size`: one batch is one step, so a replica at
`steps_per_s` serves mu = steps_per_s * batch_size requests per second and takes 1/steps_per_s
seconds per batch. Requests arrive at lambda per second (Poisson). The P99 is modelled as one
batch's time plus the 99th percentile of an M/M/1 queue's wait on the request rate:

    P99 = c * (1 / steps_per_s + ln(100) / (mu - lambda))        (mu > lambda; else unbounded)

`c`, the calibration (the serving stack's overhead over the model), and the replica's true
speed over its predicted one are learnt from the P99s the service reports (Calibration). The
model is monotone in steps_per_s, which makes the inverse (required_steps_per_s) a bisection.

The SLO holds with a margin: a round plans for P99 <= L / (1 + margin), so that co-location is
allowed only where the service's predicted P99, slowed by its partner (P1/P2's co-location
fraction times its speed alone), stays that far under the bound: the optimiser sees this as
the replica's T_min, which every member of a shared GPU must meet.
"""
import math
from dataclasses import dataclass, replace

LN_100 = math.log(100.0)
#: The calibration stays within these bounds (a report from a service under a
#: burst, or with a cold cache, must not make the model promise or refuse everything).
CALIBRATION_BOUNDS = (0.2, 5.0)
#: The learnt speed factor stays within these bounds (the prediction is off by at most 2x).
SPEED_BOUNDS = (0.5, 2.0)
#: What each report's variance of ln(c/f) and ln f grows by: the serving stack and the
#: predictions change over a service's life, so what was learnt is believed a little less each time.
DRIFT = (0.001, 0.0002)
#: Relative noise of a reported P99 (and of the reported rate, weighed by its effect on the P99).
REPORT_NOISE = 0.07
#: A replica that could not keep up is learnt with its capacity this far under the load.
CAPACITY_BELOW = 0.98
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


@dataclass(frozen=True)
class Calibration:
    """What a service's reports taught the model: `latency`, c, the factor on the modelled P99
    (the serving stack's overhead), and `speed`, f, the replica's true speed over its predicted
    one, so its capacity too: a replica predicted at s steps/s is modelled as

        P99 = c * (1 / (f*s) + ln(100) / (f*s*batch - lambda))

    One factor on the whole P99 cannot tell the two apart: it learns a slower replica in its
    batch time but not in its capacity, so near its true capacity the model promises a P99 the
    replica cannot give (`simulate`, seed 3: a replica whose queue never drained while the model
    put its P99 at 40 ms), and reading it all as slowness gives a service with an overhead
    replicas it does not need. The load tells them apart: at a light load the P99 is one batch's
    time, which only c/f sets; near capacity the queue, which f sets. So the two are learnt
    together by a Kalman filter over (ln(c/f), ln f), linearised at each report, whose `spread`
    (the covariance, (var u, cov, var y)) starts wide on c/f and narrow on f (the prediction's
    speed is believed until a loaded report says otherwise): a light report moves c/f only, a
    loaded one f mostly once c/f is known. A report of an unbounded P99 (the replica could not
    keep up) says its capacity is below the load: f moves half way (geometrically) to just
    under it, c/f kept."""

    latency: float = 1.0
    speed: float = 1.0
    spread: tuple[float, float, float] = (0.09, 0.0, 0.0225)

    def p99_ms(self, predicted_steps_per_s: float, arrival_rps: float, batch_size: int) -> float:
        """The P99 of a replica predicted at `predicted_steps_per_s`, with what was learnt."""
        return p99_ms(self.speed * predicted_steps_per_s, arrival_rps, batch_size, self.latency)

    def required_steps_per_s(self, arrival_rps: float, bound_ms: float, batch_size: int, margin: float) -> float:
        """The replica's T_min in predicted steps/s: what it truly needs over f."""
        return required_steps_per_s(arrival_rps, bound_ms, batch_size, self.latency, margin) / self.speed

    def learnt(self, predicted_steps_per_s: float, arrival_rps: float, batch_size: int,
               observed_ms: float) -> "Calibration":
        """After a report: `observed_ms`, the P99 of a replica predicted at
        `predicted_steps_per_s` receiving `arrival_rps` (math.inf: it could not keep up).
        Unchanged when the report says nothing (no speed, no load, a P99 that is not positive)."""
        if predicted_steps_per_s <= 0 or arrival_rps < 0 or not observed_ms > 0:
            return self
        var_u, cov, var_y = self.spread
        spread = (var_u + DRIFT[0], cov, var_y + DRIFT[1])
        capacity = arrival_rps / (predicted_steps_per_s * batch_size)  # f at which the replica just keeps up
        modelled = self.p99_ms(predicted_steps_per_s, arrival_rps, batch_size)
        if not math.isfinite(observed_ms):
            if self.speed <= capacity * CAPACITY_BELOW:
                return replace(self, spread=spread)
            return self._with_speed(math.sqrt(self.speed * capacity * CAPACITY_BELOW), spread)
        if not math.isfinite(modelled):  # it kept up where the model says it cannot
            return self._with_speed(capacity / CAPACITY_BELOW, spread)
        error = math.log(observed_ms / modelled)
        # d ln P99 / d ln f at fixed c/f: the queue's share of the P99 x rho / (1 - rho)
        speed = self.speed * predicted_steps_per_s
        batch_s, queue_s = 1.0 / speed, LN_100 / (speed * batch_size - arrival_rps)
        rho = arrival_rps / (speed * batch_size)
        slope = queue_s / (batch_s + queue_s) * rho / (1.0 - rho)
        var_u, cov, var_y = spread
        gain_u, gain_y = var_u - cov * slope, cov - var_y * slope  # spread x (1, -slope)
        noise = REPORT_NOISE ** 2 * (1.0 + slope ** 2)  # the P99's own noise, and the rate's through the slope
        total = gain_u - slope * gain_y + noise
        u = math.log(self.latency / self.speed) + gain_u / total * error
        y = math.log(self.speed) + gain_y / total * error
        spread = (var_u - gain_u ** 2 / total, cov - gain_u * gain_y / total, var_y - gain_y ** 2 / total)
        f = _within(math.exp(y), SPEED_BOUNDS)
        return Calibration(_within(math.exp(u) * f, CALIBRATION_BOUNDS), f, spread)

    def _with_speed(self, speed: float, spread) -> "Calibration":
        f = _within(speed, SPEED_BOUNDS)
        return Calibration(_within(self.latency / self.speed * f, CALIBRATION_BOUNDS), f, spread)


def _within(value: float, bounds: tuple[float, float]) -> float:
    return min(max(value, bounds[0]), bounds[1])
