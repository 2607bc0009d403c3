"""The group estimate: a job's fraction next to several partners from its pairwise ones."""
import pytest

from telemetry.agent.colocation import group_fraction


def test_one_partner_is_the_measured_pair_exactly():
    # The additive formula 1 / (1 + (1 / rho - 1)) drifts in the last bit for many rho (0.013
    # among them): a pair must keep its measured figure, bit for bit.
    pairs = [i / 1000 for i in range(1, 1001)]
    assert [group_fraction([rho]) for rho in pairs] == pairs
    assert group_fraction(iter([0.6])) == 0.6


def test_partners_add_their_slowdowns():
    # 0.8 costs 0.25 extra time per step, 0.5 costs 1: together 2.25 x the time alone.
    assert group_fraction([0.8, 0.5]) == pytest.approx(1 / 2.25)
    assert group_fraction([0.8, 0.8, 0.8]) == pytest.approx(1 / 1.75)
    assert group_fraction([1.0, 1.0]) == 1.0  # partners that cost nothing


def test_a_pair_that_does_not_fit_sinks_the_group_and_no_partner_is_alone():
    assert group_fraction([0.9, 0.0]) == 0.0
    assert group_fraction([0.0]) == 0.0
    assert group_fraction([]) == 1.0


def test_more_partners_never_make_a_job_faster():
    fractions = [0.9, 0.7, 0.95, 0.6]
    values = [group_fraction(fractions[:k]) for k in range(1, 5)]
    assert values == sorted(values, reverse=True) and all(0 < v <= 1 for v in values)
