"""A workload's speed and power at a GPU power limit, as fractions of what it does at the default.

Zeus (You et al., NSDI 2023; catalog/reference/zeus) trained five networks at each power limit
of four GPU types. Per (network, type, batch size, optimiser) the curve is normalised against
the highest limit measured (the board's default): speed(L) = t(Lmax) / t(L) and
power(L) = P(L) / P(Lmax); the curve kept per (network, type, batch size) is the median over the
optimisers at each limit, indexed by the limit's fraction of the default.

Where the workload's family is a Zeus network (catalog.predictors.power.ZEUS_NETWORKS) and Zeus
measured that GPU type, the answer interpolates that curve (the nearest batch size, in log
scale). Elsewhere (other families, and types Zeus never measured: K80, T4, A100...) a model
fitted on every Zeus curve answers. What it rests on: a job slows only once the limit binds, and
how hard it binds depends on how close the job's draw at the default limit comes to the limit.
With x = limit / default-limit draw and b(x) = min(1, (x / k) ** a), speed = b_s(x) / b_s(x at the
default) and likewise power (so both are exactly 1 at the default limit), the knees k and
exponents a fitted by least squares on every Zeus point below the default.
A job whose draw is unknown is taken to draw its full default limit (x = the limit's fraction),
the most slowdown the model can give. Its error, measured by leaving one network out, is in
docs/power_limits.md (`leave_one_network_out`).

Below the lowest fraction Zeus measured (on that type; on a type Zeus did not measure, the
lowest of all) nothing is known: None, so the optimiser does not offer the limit. Pure Python,
no Django.
"""
import csv
import functools
import math
import statistics
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from catalog.gavel import parse_workload
from catalog.gpu_type_defaults import GPU_TYPE_DEFAULTS

from .power import ZEUS_DIR, ZEUS_NETWORKS

#: Grid the fitted model's knee and exponent are searched on (knee: x where speed reaches 1).
_KNEES = np.linspace(0.5, 1.3, 81)
_EXPONENTS = np.linspace(0.1, 3.0, 59)


@dataclass(frozen=True)
class LimitCurve:
    """One (network, type, batch size): speed and power against the limit's fraction of the default."""

    fractions: tuple[float, ...]  # increasing, the last 1.0
    speed: tuple[float, ...]
    power: tuple[float, ...]
    draw: float  # average power at the default limit over the default limit

    def at(self, fraction: float) -> tuple[float, float] | None:
        if fraction < self.fractions[0] - 1e-9:
            return None
        fraction = min(fraction, 1.0)
        return (float(np.interp(fraction, self.fractions, self.speed)),
                float(np.interp(fraction, self.fractions, self.power)))


@dataclass(frozen=True)
class FittedModel:
    speed_knee: float
    speed_exponent: float
    power_knee: float
    power_exponent: float

    def at(self, fraction, draw):
        """(speed, power) at `fraction` of the default limit for a job drawing `draw` of it there
        (floats or arrays)."""
        return (_bent(fraction, draw, self.speed_knee, self.speed_exponent),
                _bent(fraction, draw, self.power_knee, self.power_exponent))


def _bent(fraction, draw, knee, exponent):
    """min(1, (x / knee) ** exponent) at x = fraction / draw, over its value at the default."""
    at_limit = np.minimum(1.0, (np.asarray(fraction / draw) / knee) ** exponent)
    at_default = np.minimum(1.0, (np.asarray(1.0 / draw) / knee) ** exponent)
    return at_limit / at_default


def read_limit_curves(directory: Path | str = ZEUS_DIR) -> dict[tuple[str, str], dict[int, LimitCurve]]:
    """{(network, gpu_type): {batch size: LimitCurve}} from Zeus's summary_power_<type>.csv files."""
    runs = defaultdict(dict)  # (network, type, batch, optimiser) -> {limit: (time, power)}
    for path in sorted(Path(directory).glob("summary_power_*.csv")):
        gpu_type = path.stem.removeprefix("summary_power_")
        with open(path, encoding="utf-8") as handle:
            for row in csv.DictReader(handle):
                key = (row["network"], gpu_type, int(row["batch_size"]), row["optimizer"])
                runs[key][float(row["power_limit"])] = (float(row["time_per_epoch"]), float(row["average_power"]))
    per_limit = defaultdict(lambda: defaultdict(list))  # (network, type, batch) -> fraction -> [(speed, power)]
    draws = defaultdict(list)
    for (network, gpu_type, batch, _), measured in runs.items():
        top = max(measured)
        t_top, p_top = measured[top]
        draws[(network, gpu_type, batch)].append(p_top / top)
        for limit, (t, p) in measured.items():
            per_limit[(network, gpu_type, batch)][limit / top].append((t_top / t, p / p_top))
    curves = defaultdict(dict)
    for (network, gpu_type, batch), points in per_limit.items():
        fractions = tuple(sorted(points))
        curves[(network, gpu_type)][batch] = LimitCurve(
            fractions=fractions,
            speed=tuple(statistics.median(s for s, _ in points[f]) for f in fractions),
            power=tuple(statistics.median(p for _, p in points[f]) for f in fractions),
            draw=statistics.median(draws[(network, gpu_type, batch)]),
        )
    return dict(curves)


def _points(curves: dict, leave_out: str | None = None) -> np.ndarray:
    """Rows (fraction, draw, speed, power) of every curve's points below the default."""
    rows = [(f, c.draw, s, p)
            for (network, _), by_batch in curves.items() if network != leave_out
            for c in by_batch.values()
            for f, s, p in zip(c.fractions, c.speed, c.power) if f < 1.0]
    return np.array(rows, dtype=float)


def _fit_one(fraction: np.ndarray, draw: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    best, arg = math.inf, (1.0, 1.0)
    for knee in _KNEES:
        for exponent in _EXPONENTS:
            err = float(np.sum((_bent(fraction, draw, knee, exponent) - y) ** 2))
            if err < best:
                best, arg = err, (float(knee), float(exponent))
    return arg


def fit(curves: dict, leave_out: str | None = None) -> FittedModel:
    """The model fitted on every Zeus point (but `leave_out`'s, a network)."""
    data = _points(curves, leave_out)
    return FittedModel(*_fit_one(data[:, 0], data[:, 1], data[:, 2]), *_fit_one(data[:, 0], data[:, 1], data[:, 3]))


def leave_one_network_out(curves: dict) -> dict[str, dict[str, float]]:
    """Per network: the model fitted without it, its mean absolute percentage error on that
    network's points ({"speed": %, "power": %, "points": n})."""
    errors = {}
    for network in sorted({n for n, _ in curves}):
        model = fit(curves, leave_out=network)
        data = _points({k: v for k, v in curves.items() if k[0] == network})
        speed, power = model.at(data[:, 0], data[:, 1])
        errors[network] = {
            "speed": float(np.mean(np.abs(speed - data[:, 2]) / data[:, 2]) * 100),
            "power": float(np.mean(np.abs(power - data[:, 3]) / data[:, 3]) * 100),
            "points": int(len(data)),
        }
    return errors


class PowerLimitModel:
    """`at_power_limit` for the optimiser's Predictions (scheduler/optimizer/problem.py)."""

    def __init__(self, curves: dict | None = None, default_limits_w: dict[str, float] | None = None):
        self.curves = read_limit_curves() if curves is None else curves
        self.model = fit(self.curves)
        self.default_limits_w = default_limits_w or {d.name: float(d.tdp_w) for d in GPU_TYPE_DEFAULTS}
        lowest = defaultdict(lambda: 1.0)
        for (_, gpu_type), by_batch in self.curves.items():
            for c in by_batch.values():
                lowest[gpu_type] = min(lowest[gpu_type], c.fractions[0])
        self.lowest_fraction = dict(lowest)
        self.lowest_anywhere = max(min(lowest.values(), default=1.0), 0.0)
        self._answers: dict[tuple, tuple[float, float] | None] = {}  # a solve asks the same few limits often

    def measured_curve(self, family: str, batch_size: int | None, gpu_type: str) -> LimitCurve | None:
        network = ZEUS_NETWORKS.get(family)
        by_batch = self.curves.get((network, gpu_type)) if network else None
        if not by_batch:
            return None
        batch = batch_size or 1
        return by_batch[min(by_batch, key=lambda b: abs(math.log(b) - math.log(batch)))]

    def at_power_limit(self, workload: str, gpu_type: str, limit_w: float, *, default_w: float | None = None,
                       draw_w: float | None = None) -> tuple[float, float] | None:
        """(speed, power) of `workload` (a Gavel-style name: "family (batch size N)") at `limit_w`
        on `gpu_type`, as fractions of its throughput and its GPU's power at the default limit
        (`default_w`, else the type's datasheet TDP); `draw_w`: its power at the default limit,
        when known (the fitted model only). None where nothing is known: an unknown type's
        default, a limit that is not a finite number > 0, or below the measured fractions."""
        key = (workload, gpu_type, limit_w, default_w, draw_w)
        if key not in self._answers:
            self._answers[key] = self._answer(workload, gpu_type, limit_w, default_w, draw_w)
        return self._answers[key]

    def _answer(self, workload, gpu_type, limit_w, default_w, draw_w) -> tuple[float, float] | None:
        default_w = default_w or self.default_limits_w.get(gpu_type)
        if not default_w or not isinstance(limit_w, (int, float)) or not math.isfinite(limit_w) or limit_w <= 0:
            return None
        fraction = limit_w / default_w
        if fraction >= 1.0:
            return 1.0, 1.0
        parsed = parse_workload(workload)
        curve = self.measured_curve(parsed.family, parsed.batch_size, gpu_type)
        if curve is not None:
            return curve.at(fraction)
        if fraction < self.lowest_fraction.get(gpu_type, self.lowest_anywhere) - 1e-9:
            return None
        draw = min(1.0, draw_w / default_w) if draw_w and draw_w > 0 else 1.0
        speed, power = self.model.at(fraction, draw)
        return float(speed), float(power)


@functools.cache
def default_model() -> PowerLimitModel:
    """The model on the project's Zeus data, read and fitted once per process."""
    return PowerLimitModel()
