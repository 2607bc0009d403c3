"""Each workload's speed and power at a power limit on a GPU type, learnt from what the cluster
measured there: the power-limit model's curve (power_limits.py) corrected per (workload, type).

The model predicts a shortfall s = 1 - m below the default-limit figure at a limit (m: its speed
or power fraction there). Taken as true: the workload's real shortfall on that type is c x s, one
factor c per (workload, type) and per quantity (its curve bends harder or softer than the
model's, as the held-out networks of docs/power_limits.md do).

A reading is a rate seen at a limit (s > 0) or at the default or a limit the model has not
slowing it (s = 0), as a ratio q to a reference rate at the default that telemetry never changed
(the catalog's measurement, else P1's estimate: docs/power_limits.md says why). The reference is
off by a factor g of its own, the same for all readings of the pair, so q = g (1 - c s) + noise:
linear in a = g and b = g c, q = a - b s. Their posterior under the priors a ~ N(1, REFERENCE_SD^2)
and b ~ N(1, PRIOR_SD^2) (the model as it is), each reading of spread OBS_SD, is the 2 x 2
Bayesian linear regression

    P = diag(1/REFERENCE_SD^2, 1/PRIOR_SD^2) + sum (1, -s)(1, -s)^T / OBS_SD^2
    (a, b) = P^-1 (1/REFERENCE_SD^2 + sum q / OBS_SD^2,  1/PRIOR_SD^2 - sum s q / OBS_SD^2)

and c = b / a. Readings at one depth alone cannot tell the reference's error from the curve's:
split by the priors, a reference that is off bends a curve that was right, and every measurement
brought back to the default by it is off too (docs/power_limits.md). So the curve stays the
model's (c = 1, a fitted alone) until the pair's readings lie at two depths at least (the default
counts as one; DEPTH_STEP apart); then readings at the default pin g, and readings at several
depths separate the two. The correction never makes a limit bind that the model says does not
(c multiplies s). Pure Python, no Django.
"""
import math
from collections.abc import Iterable
from dataclasses import dataclass, field

#: The model's own error, as the spread of c: its shortfalls were off by about this much on the
#: networks left out of its fit (docs/power_limits.md; the simulator's truth departs by as much).
PRIOR_SD = 0.3
#: Spread of the reference rate's error (log scale, about the catalog's and P1's error on a
#: workload: the simulator's truth departs from its data by 0.15).
REFERENCE_SD = 0.15
#: Spread of one reading: telemetry noise.
OBS_SD = 0.05
#: A model shortfall below this counts as none (NVML rounds limits to watts).
MIN_SHORTFALL = 0.005
#: Shortfalls closer than this are one depth (the curve moves once readings lie at two).
DEPTH_STEP = 0.02
#: A ratio above this is no reading of a rate against its reference (a wrong reference): refused.
MAX_RATIO = 3.0
#: The learnt fraction never falls below this (the model's own curves do not either).
FLOOR = 0.05


def binds(model_fraction: float) -> bool:
    """Whether the model has the workload slower (or drawing less) at the limit than at the default."""
    return 1.0 - model_fraction >= MIN_SHORTFALL


@dataclass(frozen=True)
class Correction:
    """c, the reference's factor g, and how many readings at a limit that slows (`count`) and in
    all (`readings`) they rest on."""

    factor: float = 1.0
    reference: float = 1.0
    count: int = 0
    readings: int = 0

    def at(self, model_fraction: float) -> float:
        """The learnt fraction where the model says `model_fraction`."""
        return min(1.0, max(FLOOR, 1.0 - self.factor * (1.0 - model_fraction)))


@dataclass
class _Sums:
    """The regression's sufficient statistics: the posterior precision and right-hand side."""

    p_aa: float = 1.0 / REFERENCE_SD ** 2
    p_ab: float = 0.0
    p_bb: float = 1.0 / PRIOR_SD ** 2
    r_a: float = 1.0 / REFERENCE_SD ** 2
    r_b: float = 1.0 / PRIOR_SD ** 2
    count: int = 0
    readings: int = 0
    depths: list[float] = field(default_factory=list)  # the shortfalls read, DEPTH_STEP apart at least
    # a alone, the curve held at the model's (c = 1: q = a (1 - s)), until two depths are read
    p_alone: float = 1.0 / REFERENCE_SD ** 2
    r_alone: float = 1.0 / REFERENCE_SD ** 2

    def add(self, model: float, ratio: float) -> None:
        s, w = (1.0 - model if binds(model) else 0.0), 1.0 / OBS_SD ** 2
        self.p_aa, self.p_ab, self.p_bb = self.p_aa + w, self.p_ab - w * s, self.p_bb + w * s * s
        self.r_a, self.r_b = self.r_a + w * ratio, self.r_b - w * s * ratio
        self.p_alone, self.r_alone = self.p_alone + w * (1.0 - s) ** 2, self.r_alone + w * (1.0 - s) * ratio
        if all(abs(s - depth) >= DEPTH_STEP for depth in self.depths):
            self.depths.append(s)
        self.readings += 1
        self.count += s > 0

    def correction(self) -> "Correction":
        if len(self.depths) < 2:
            return Correction(reference=self.r_alone / self.p_alone, count=self.count, readings=self.readings)
        det = self.p_aa * self.p_bb - self.p_ab * self.p_ab
        a = (self.p_bb * self.r_a - self.p_ab * self.r_b) / det
        b = (self.p_aa * self.r_b - self.p_ab * self.r_a) / det
        return Correction(factor=max(0.0, b / a) if a > 0 else 1.0, reference=a, count=self.count,
                          readings=self.readings)


def correction(pairs: Iterable[tuple[float, float]]) -> Correction:
    """c from (model fraction, ratio to the reference) pairs (the regression above). c is kept
    >= 0: a limit never makes a job faster."""
    sums = _Sums()
    for model, ratio in pairs:
        sums.add(model, ratio)
    return sums.correction()


def check_fraction(name: str, value: float | None, top: float) -> None:
    """ValueError naming `name` where `value` is not a number in (0, top]."""
    if value is None:
        return
    if not isinstance(value, (int, float)) or not math.isfinite(value) or not 0.0 < value <= top:
        raise ValueError(f"{name} must be a number in (0, {top:g}], got {value!r}")


@dataclass(frozen=True)
class LimitReading:
    """One measurement: the model's (speed, power) fractions at its limit (1 at the default) and
    what was seen, as ratios to the reference rate and draw at the default (power None where the
    draw or its reference is unknown)."""

    model_speed: float
    speed: float
    model_power: float | None = None
    power: float | None = None

    def __post_init__(self):
        for name, top in (("model_speed", 1.0), ("speed", MAX_RATIO), ("model_power", 1.0), ("power", MAX_RATIO)):
            check_fraction(name, getattr(self, name), top)


class LearntLimits:
    """Per (workload, GPU type), the readings' statistics and the corrections they give."""

    def __init__(self, readings: Iterable[tuple[str, str, LimitReading]] = ()):
        self._sums: dict[tuple[str, str], tuple[_Sums, _Sums]] = {}
        self._learnt: dict[tuple[str, str], tuple[Correction, Correction]] = {}
        for workload, gpu_type, reading in readings:
            self.add(workload, gpu_type, reading)

    def add(self, workload: str, gpu_type: str, reading: LimitReading) -> None:
        speed, power = self._sums.setdefault((workload, gpu_type), (_Sums(), _Sums()))
        speed.add(reading.model_speed, reading.speed)
        if reading.power is not None and reading.model_power is not None:
            power.add(reading.model_power, reading.power)
        self._learnt.pop((workload, gpu_type), None)

    def corrections(self, workload: str, gpu_type: str) -> tuple[Correction, Correction]:
        """(speed, power) corrections of the pair; the model's own (c = 1) where nothing was read."""
        key = (workload, gpu_type)
        if key not in self._learnt:
            speed, power = self._sums.get(key, (_Sums(), _Sums()))
            self._learnt[key] = (speed.correction(), power.correction())
        return self._learnt[key]

    def at_power_limit(self, workload: str, gpu_type: str,
                       model: tuple[float, float] | None) -> tuple[float, float] | None:
        """The model's (speed, power) at a limit, corrected by what was read of the pair."""
        if model is None:
            return None
        speed, power = self.corrections(workload, gpu_type)
        return speed.at(model[0]), power.at(model[1])
