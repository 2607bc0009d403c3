"""One GPU's own power curve (watts against utilization), fitted from its samples.

Boards of one type draw different power at the same load, and the datasheet line from idle to
TDP is only a guess at partial load (docs/gpu_health.md). The fit is deliberately simple and
robust: the samples fall into fixed utilization bins, each bin with enough samples gives one
point (its median utilization, its median power: a stray spike moves a median little), and the
points are made non-decreasing (a board draws no less at more load; a dip is noise). The
residual spread is the standard deviation of the samples around that curve, the uncertainty
the console shows. Pure Python, no Django: the control plane and `simulate` share it.

A fit is refused (None, with a reason) when it would say little: too few samples, or too few
bins filled (a board that only ever idled or only ever ran flat out has no curve, only a
point). Impossible samples (NaN, power below zero or above twice the TDP, utilization outside
0..1) are left out and counted, never fitted.
"""
import math
from dataclasses import dataclass
from statistics import median

MIN_SAMPLES = 600  # ten minutes of one GPU at 1 Hz
BINS = 10  # fixed utilization bins of 0.1
MIN_BIN_SAMPLES = 20  # a bin with fewer gives no point
MIN_BINS = 3  # fewer points than this is not a curve


@dataclass(frozen=True)
class CurveFit:
    points: tuple[tuple[float, float], ...]  # (utilization, W), increasing utilization, non-decreasing W
    residual_std_w: float
    samples: int  # samples the fit used
    left_out: int  # impossible samples left out


@dataclass(frozen=True)
class Refusal:
    reason: str
    samples: int
    left_out: int


def fit_power_curve(samples, tdp_w: float) -> CurveFit | Refusal:
    """A curve from (utilization 0..1, W) pairs of one GPU of TDP `tdp_w`, or why not."""
    good, left_out = [], 0
    for utilization, power in samples:
        if _possible(utilization, power, tdp_w):
            good.append((float(utilization), float(power)))
        else:
            left_out += 1
    if len(good) < MIN_SAMPLES:
        return Refusal(f"{len(good)} usable samples, at least {MIN_SAMPLES} needed", len(good), left_out)
    bins: list[list[tuple[float, float]]] = [[] for _ in range(BINS)]
    for u, w in good:
        bins[min(int(u * BINS), BINS - 1)].append((u, w))
    points = [
        (median(u for u, _ in b), median(w for _, w in b)) for b in bins if len(b) >= MIN_BIN_SAMPLES
    ]
    if len(points) < MIN_BINS:
        return Refusal(
            f"utilization too narrow: {len(points)} of {BINS} bins hold {MIN_BIN_SAMPLES} samples, "
            f"at least {MIN_BINS} needed", len(good), left_out,
        )
    points = _non_decreasing(points)
    residuals = [w - _at(points, u) for u, w in good]
    mean = sum(residuals) / len(residuals)
    std = math.sqrt(sum((r - mean) ** 2 for r in residuals) / len(residuals))
    return CurveFit(tuple(points), std, len(good), left_out)


def _possible(utilization, power, tdp_w: float) -> bool:
    try:
        u, w = float(utilization), float(power)
    except (TypeError, ValueError):
        return False
    return math.isfinite(u) and math.isfinite(w) and 0.0 <= u <= 1.0 and 0.0 <= w <= 2.0 * tdp_w


def _non_decreasing(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Pool adjacent violators: a run of points whose power falls is replaced by its mean, so
    the curve never draws less at more load and stays as close to the medians as it can."""
    blocks: list[list] = []  # [sum of W, count, utilizations]
    for u, w in points:
        blocks.append([w, 1, [u]])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            w2, n2, us2 = blocks.pop()
            blocks[-1][0] += w2
            blocks[-1][1] += n2
            blocks[-1][2] += us2
    return [(u, total / n) for total, n, us in blocks for u in us]


def _at(points, u: float) -> float:
    """The curve at u: linear between points, held at the ends (as optimizer.power.PowerCurve)."""
    if u <= points[0][0]:
        return points[0][1]
    for (u0, w0), (u1, w1) in zip(points, points[1:]):
        if u <= u1:
            return w0 + (w1 - w0) * (u - u0) / (u1 - u0) if u1 > u0 else w1
    return points[-1][1]
