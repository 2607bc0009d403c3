"""The pure arithmetic (scheduler.accounting.energy): a GPU's power as a step function, one
allocation's share of it, cut at midnight and among co-located allocations."""
from datetime import date

import pytest

from scheduler.accounting.energy import RAW_HOLD_S, PowerTrace, allocation_pieces, gpu_readings

DAY = 86400.0


def trace(raw=(), minutes=()):
    return PowerTrace(gpu_readings(list(raw), list(minutes)))


def test_samples_hold_until_the_next_one():
    t = trace(raw=[(0.0, 100.0), (1.0, 200.0), (2.0, 300.0)])
    assert t.joules(0.0, 2.0) == pytest.approx(300.0)
    assert t.joules(0.5, 1.5) == pytest.approx(50.0 + 100.0)


def test_a_gap_longer_than_the_hold_counts_nothing_beyond_it():
    t = trace(raw=[(0.0, 100.0), (100.0, 100.0)])
    assert t.joules(0.0, 100.0) == pytest.approx(100.0 * RAW_HOLD_S)
    assert t.joules(-50.0, 0.0) == 0.0  # before the first reading


def test_an_unread_sample_counts_nothing_and_cuts_the_one_before():
    t = trace(raw=[(0.0, 100.0), (1.0, None), (2.0, 100.0)])
    assert t.joules(0.0, 3.0) == pytest.approx(200.0)


def test_a_minute_aggregate_holds_its_minute_and_wins_over_late_raw_samples_in_it():
    t = trace(raw=[(65.0, 1000.0), (120.0, 50.0)], minutes=[(60.0, 150.0)])
    assert t.joules(60.0, 120.0) == pytest.approx(150.0 * 60)
    assert t.joules(120.0, 121.0) == pytest.approx(50.0)


def test_an_allocation_alone_gets_all_of_its_gpu():
    [piece] = allocation_pieces(0.0, 600.0, trace(raw=[(float(s), 200.0) for s in range(600)]), [(0.0, 600.0)])
    assert (piece.joules, piece.gpu_s, piece.until) == (pytest.approx(120_000.0), 600.0, 600.0)


def test_co_located_allocations_split_the_power_and_the_time_while_they_share():
    t = trace(raw=[(float(s), 200.0) for s in range(600)])
    occupancy = [(0.0, float("inf")), (300.0, 600.0)]
    first = allocation_pieces(0.0, 600.0, t, occupancy)
    second = allocation_pieces(300.0, 600.0, t, occupancy)
    assert sum(p.joules for p in first) == pytest.approx(200 * 300 + 200 * 300 / 2)
    assert sum(p.gpu_s for p in first) == pytest.approx(450.0)
    assert sum(p.joules for p in second) == pytest.approx(200 * 300 / 2)


def test_pieces_are_cut_at_utc_midnight():
    start = 10 * DAY - 300.0  # 1970-01-10 23:55 UTC
    t = trace(raw=[(start + s, 100.0) for s in range(600)])
    pieces = allocation_pieces(start, start + 600.0, t, [(start, float("inf"))])
    assert [(p.day, p.joules, p.gpu_s) for p in pieces] == [
        (date(1970, 1, 10), pytest.approx(30_000.0), 300.0), (date(1970, 1, 11), pytest.approx(30_000.0), 300.0),
    ]
