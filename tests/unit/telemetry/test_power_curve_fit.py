"""The per-GPU power-curve fitter (telemetry/power_curve_fit.py): pure, no database."""
import math
import random

import pytest

from telemetry.power_curve_fit import MIN_SAMPLES, CurveFit, Refusal, fit_power_curve

TDP = 300.0


def line(n, noise=5.0, seed=1, lo=0.0, hi=1.0):
    """n samples of a board drawing 60 + 200 u W, utilization uniform in [lo, hi), Gaussian noise."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        u = rng.uniform(lo, hi)
        out.append((u, 60 + 200 * u + rng.gauss(0, noise)))
    return out


def test_a_known_line_is_recovered_with_its_noise():
    fit = fit_power_curve(line(3000), TDP)
    assert isinstance(fit, CurveFit)
    assert len(fit.points) == 10 and fit.samples == 3000 and fit.left_out == 0
    for u, w in fit.points:
        assert w == pytest.approx(60 + 200 * u, abs=3.0)
    assert fit.residual_std_w == pytest.approx(5.0, rel=0.15)
    assert [u for u, _ in fit.points] == sorted(u for u, _ in fit.points)


def test_too_few_samples_are_refused():
    fit = fit_power_curve(line(MIN_SAMPLES - 1), TDP)
    assert isinstance(fit, Refusal)
    assert f"at least {MIN_SAMPLES}" in fit.reason and fit.samples == MIN_SAMPLES - 1


def test_a_board_that_only_ran_at_one_load_has_no_curve():
    fit = fit_power_curve(line(2000, lo=0.92, hi=0.99), TDP)
    assert isinstance(fit, Refusal)
    assert "utilization too narrow: 1 of 10 bins" in fit.reason


def test_impossible_samples_are_left_out_and_counted():
    bad = [(math.nan, 100), (0.5, math.nan), (0.5, -1), (0.5, 2 * TDP + 1), (1.5, 100), (-0.1, 100),
           (None, 100), ("x", 100)]
    fit = fit_power_curve(line(1000) + bad * 50, TDP)
    assert isinstance(fit, CurveFit)
    assert fit.left_out == len(bad) * 50 and fit.samples == 1000
    assert max(w for _, w in fit.points) < 2 * TDP
    refused = fit_power_curve(bad * 100, TDP)
    assert isinstance(refused, Refusal) and refused.left_out == len(bad) * 100 and refused.samples == 0


def test_the_curve_never_falls_with_load():
    """A board whose medians dip at mid load (noise): the dip is pooled with its neighbour."""
    samples = [(0.05, 50.0)] * 100 + [(0.45, 150.0)] * 100 + [(0.55, 130.0)] * 100 + [(0.95, 250.0)] * 400
    fit = fit_power_curve(samples, TDP)
    watts = [w for _, w in fit.points]
    assert watts == [50.0, 140.0, 140.0, 250.0]
