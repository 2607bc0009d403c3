"""gamma_a(u): the power a GPU type draws at utilization u, a piecewise-linear lookup table.

Profiles (NVML) give points of (utilization, watts); between points power is interpolated,
outside them it is held at the end value, so partial load is priced as measured.
"""
from bisect import bisect_right
from dataclasses import dataclass


@dataclass(frozen=True)
class PowerCurve:
    points: tuple[tuple[float, float], ...]

    @classmethod
    def from_points(cls, points, idle_w: float, tdp_w: float) -> "PowerCurve":
        """A curve from [[u, W], ...]; an empty table means linear from idle to TDP."""
        pts = tuple(sorted((float(u), float(w)) for u, w in points)) or ((0.0, idle_w), (1.0, tdp_w))
        return cls(pts)

    def __call__(self, utilization: float) -> float:
        pts = self.points
        u = min(1.0, max(0.0, utilization))
        if u <= pts[0][0]:
            return pts[0][1]
        if u >= pts[-1][0]:
            return pts[-1][1]
        i = bisect_right([p[0] for p in pts], u)
        (u0, w0), (u1, w1) = pts[i - 1], pts[i]
        return w0 + (w1 - w0) * (u - u0) / (u1 - u0)
