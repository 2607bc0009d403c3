"""Each workload's speed and power at a power limit on a GPU type, learnt from what the cluster
measured there: the power-limit model's curve (power_limits.py) corrected per (workload, type).

The model predicts a shortfall 1 - m below the default-limit figure at a limit (m: its speed or
power fraction there). Taken as true: the workload's real shortfall on that type is c x (1 - m),
one factor c per (workload, type) and per quantity, i.e. its curve bends harder or softer than
the model's, as the held-out networks of docs/power_limits.md do. Every observation (m, the
fraction y seen) is one linear measurement 1 - y = c (1 - m) + noise, and c is its posterior mean
under the prior N(1, PRIOR_SD^2) (the model as it is):

    c = (1 / PRIOR_SD^2 + sum (1 - m)(1 - y) / OBS_SD^2) / (1 / PRIOR_SD^2 + sum (1 - m)^2 / OBS_SD^2)

so it moves away from the model with the count of observations and with how deep they were
(an observation where the model predicts no shortfall says nothing of c and is not taken: the
correction never makes a limit bind that the model says does not). A fraction is read by the
caller against a default-limit rate it knows (docs/power_limits.md, "Limit curves learnt from
telemetry", says which); this module only learns from the fractions. Pure Python, no Django.
"""
import math
from collections.abc import Iterable
from dataclasses import dataclass

#: The model's own error, as the spread of c: its shortfalls were off by about this much on the
#: networks left out of its fit (docs/power_limits.md; the simulator's truth departs by as much).
PRIOR_SD = 0.3
#: Spread of one observed fraction: telemetry noise and the error of the default-limit rate it
#: was read against (P2's estimate, docs/power_limits.md).
OBS_SD = 0.1
#: A model shortfall below this carries no information about c (NVML rounds limits to watts).
MIN_SHORTFALL = 0.005
#: An observed fraction above this is no reading of a limit (a wrong reference rate): refused.
MAX_FRACTION = 1.5
#: The learnt fraction never falls below this (the model's own curves do not either).
FLOOR = 0.05


def binds(model_fraction: float) -> bool:
    """Whether the model has the workload slower (or drawing less) at the limit than at the default."""
    return 1.0 - model_fraction >= MIN_SHORTFALL


@dataclass(frozen=True)
class Correction:
    """c and its posterior standard deviation, from `count` observations."""

    factor: float = 1.0
    sd: float = PRIOR_SD
    count: int = 0

    def at(self, model_fraction: float) -> float:
        """The learnt fraction where the model says `model_fraction`."""
        return min(1.0, max(FLOOR, 1.0 - self.factor * (1.0 - model_fraction)))


def correction(pairs: Iterable[tuple[float, float]]) -> Correction:
    """c from (model fraction, observed fraction) pairs; pairs where the model predicts no
    shortfall are skipped. c is kept >= 0: a limit never makes a job faster."""
    precision, weighted, count = 1.0 / PRIOR_SD ** 2, 1.0 / PRIOR_SD ** 2, 0
    for model, observed in pairs:
        if not binds(model):
            continue
        precision += (1.0 - model) ** 2 / OBS_SD ** 2
        weighted += (1.0 - model) * (1.0 - observed) / OBS_SD ** 2
        count += 1
    return Correction(factor=max(0.0, weighted / precision), sd=precision ** -0.5, count=count)


def check_fraction(name: str, value: float | None) -> None:
    """ValueError naming `name` where `value` is no fraction a limit could give."""
    if value is None:
        return
    if not isinstance(value, (int, float)) or not math.isfinite(value) or not 0.0 < value <= MAX_FRACTION:
        raise ValueError(f"{name} must be a number in (0, {MAX_FRACTION}], got {value!r}")


@dataclass(frozen=True)
class LimitReading:
    """One measurement at a limit: the model's (speed, power) fractions there and the ones seen
    (power None where the draw was not measured)."""

    model_speed: float
    speed: float
    model_power: float | None = None
    power: float | None = None

    def __post_init__(self):
        for name in ("model_speed", "speed", "model_power", "power"):
            check_fraction(name, getattr(self, name))
        if self.model_speed > 1.0 or (self.model_power is not None and self.model_power > 1.0):
            raise ValueError("a model fraction is at most 1 (the default limit)")


class LearntLimits:
    """Per (workload, GPU type), the readings taken at limits and the corrections they give."""

    def __init__(self, readings: Iterable[tuple[str, str, LimitReading]] = ()):
        self._readings: dict[tuple[str, str], list[LimitReading]] = {}
        self._learnt: dict[tuple[str, str], tuple[Correction, Correction]] = {}
        for workload, gpu_type, reading in readings:
            self.add(workload, gpu_type, reading)

    def add(self, workload: str, gpu_type: str, reading: LimitReading) -> bool:
        """Take one reading; False (nothing kept) where the model predicts no slowdown there."""
        if not binds(reading.model_speed):
            return False
        self._readings.setdefault((workload, gpu_type), []).append(reading)
        self._learnt.pop((workload, gpu_type), None)
        return True

    def corrections(self, workload: str, gpu_type: str) -> tuple[Correction, Correction]:
        """(speed, power) corrections of the pair; the model's own (c = 1) where nothing was read."""
        key = (workload, gpu_type)
        if key not in self._learnt:
            readings = self._readings.get(key, ())
            self._learnt[key] = (
                correction((r.model_speed, r.speed) for r in readings),
                correction((r.model_power, r.power) for r in readings if r.power is not None and r.model_power),
            )
        return self._learnt[key]

    def readings(self, workload: str, gpu_type: str) -> int:
        return len(self._readings.get((workload, gpu_type), ()))

    def at_power_limit(self, workload: str, gpu_type: str,
                       model: tuple[float, float] | None) -> tuple[float, float] | None:
        """The model's (speed, power) at a limit, corrected by what was read of the pair."""
        if model is None:
            return None
        speed, power = self.corrections(workload, gpu_type)
        return speed.at(model[0]), power.at(model[1])
