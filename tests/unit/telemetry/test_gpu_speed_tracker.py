"""The speed tracker's maths (telemetry/gpu_speed.py, docs/gpu_health.md): pure, no database."""
import math

import pytest

from telemetry.gpu_speed import SpeedTracker


def feed(tracker, rounds, slow=1.0, boards=4, start=0, workload="w", error=1.0):
    """`rounds` measurements of every board, board 0 at `slow`, the predictor off by `error`,
    the boards wobbling +-1 %; -> after how many rounds board 0 was first flagged (None: not)."""
    flagged = None
    for r in range(start, start + rounds):
        for g in range(boards):
            wobble = 1 + 0.01 * ((r + g) % 3 - 1)
            tracker.observe(str(g), workload, "v100", 10.0, 10.0 * error * wobble * (slow if g == 0 else 1.0))
        if flagged is None and tracker.flag("0"):
            flagged = r - start + 1
    return flagged


def test_a_board_that_slowed_ten_percent_reads_ten_percent_slow_and_is_flagged():
    tracker = SpeedTracker()
    feed(tracker, 10)
    assert tracker.flag("0") is None and tracker.speed("0").factor == pytest.approx(1.0, abs=0.02)
    after = feed(tracker, 40, slow=0.9, start=10)
    assert after is not None and after <= 15
    feed(tracker, 30, slow=0.9, start=50)
    assert tracker.speed("0").factor == pytest.approx(0.9, abs=0.01)  # its own measurements do not pull its baseline
    assert all(tracker.speed(str(g)).factor == pytest.approx(1.0, abs=0.04) for g in (1, 2, 3))
    assert "runs at 90% of its type's predicted speed" in tracker.flag("0")


def test_a_badly_predicted_workload_blames_the_predictor_not_the_boards():
    tracker = SpeedTracker()
    feed(tracker, 30, error=0.7)
    assert all(tracker.flag(str(g)) is None for g in range(4))
    assert all(tracker.speed(str(g)).factor == pytest.approx(1.0, abs=0.03) for g in range(4))


def test_a_workload_only_one_board_ran_teaches_nothing_about_it():
    tracker = SpeedTracker()
    for _ in range(20):
        assert tracker.observe("0", "alone", "v100", 10.0, 7.0)
    assert tracker.speed("0").observations == 0 and tracker.speed("0").factor == 1.0
    assert math.isinf(tracker.speed("0").std) and tracker.flag("0") is None


@pytest.mark.parametrize("predicted, measured", [(0, 5), (10, 0), (math.nan, 5), (10, math.inf), (-1, 5), ("10", 5)])
def test_impossible_measurements_are_refused_and_teach_nothing(predicted, measured):
    tracker = SpeedTracker()
    feed(tracker, 3)
    before = tracker.state()
    assert tracker.observe("0", "w", "v100", predicted, measured) is False
    assert tracker.state() == before


def test_the_state_round_trips():
    tracker = SpeedTracker()
    feed(tracker, 12, slow=0.85)
    copy = SpeedTracker()
    copy.load(tracker.state())
    assert copy.state() == tracker.state() and copy.flag("0") == tracker.flag("0")
    feed(tracker, 3, start=12)
    feed(copy, 3, start=12)
    assert copy.speed("0") == tracker.speed("0")
