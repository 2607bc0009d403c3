"""The pure rules of fair_share.py the accounting uses: GPU-hour weights and budget shares."""
import pytest

from scheduler.optimizer.fair_share import budget_shares, decayed, gpu_hour_weight


def test_a_gpu_hour_counts_its_tdp_over_a_v100s():
    assert [gpu_hour_weight(w) for w in (300, 150, 700)] == [1.0, 0.5, pytest.approx(7 / 3)]


def test_shares_fall_in_proportion_past_the_budget_only():
    assert budget_shares(2.0, None, 1e6) == 2.0
    assert budget_shares(2.0, 100.0, 100.0) == 2.0
    assert budget_shares(2.0, 100.0, 400.0) == 0.5
    assert budget_shares(2.0, 0.0, 1.0) == 0.0


def test_one_half_life_halves():
    assert decayed(10.0, 3600.0, 3600.0) == 5.0 and decayed(10.0, 0.0, 3600.0) == 10.0
