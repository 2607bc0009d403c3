"""The liveness rules as plain data (telemetry.lifecycle): a drain outlives down and back, the
fence leaves the control plane a margin, and the silence detector presumes itself away when it
heard nobody or did not run."""
from datetime import UTC, datetime, timedelta

import pytest

from telemetry import lifecycle
from telemetry.lifecycle import (
    DOWN,
    DRAINING,
    READY,
    Hearing,
    fence_after_s,
    hearing_after_check,
    silence_may_be_declared,
)

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
TIMEOUT = 60.0


def check(previous, seconds, heard_nobody=False):
    return hearing_after_check(previous, now=T0 + timedelta(seconds=seconds), timeout_s=TIMEOUT, check_every_s=15,
                               heard_nobody=heard_nobody)


def may_declare(hearing, seconds):
    return silence_may_be_declared(hearing, now=T0 + timedelta(seconds=seconds), timeout_s=TIMEOUT)


@pytest.mark.parametrize("current, drained, after", [
    (DOWN, True, DRAINING), (DOWN, False, READY), (DRAINING, True, DRAINING), (READY, False, READY),
    (DRAINING, False, READY),  # draining only because its agent was leaving: back
])
def test_a_down_node_comes_back_draining_when_drained(current, drained, after):
    assert lifecycle.node_state_after_report(current, drained=drained) == after


@pytest.mark.parametrize("timeout, fence", [(60, 54), (8, 6), (10, 8), (600, 540)])
def test_the_fence_leaves_a_tenth_of_the_timeout_and_at_least_2_s(timeout, fence):
    assert fence_after_s(timeout) == fence
    assert timeout - fence_after_s(timeout) >= 2


def test_a_detector_that_hears_its_nodes_declares_silence_at_once():
    hearing = check(Hearing(), 0)
    assert hearing == Hearing(checked_at=T0) and may_declare(hearing, 0)
    assert may_declare(check(hearing, 15), 15)


def test_hearing_nobody_is_deafness_and_hearing_again_starts_a_full_timeout():
    deaf = check(check(Hearing(), 0), 15, heard_nobody=True)
    assert deaf.deaf and not may_declare(deaf, 15)
    still = check(deaf, 30, heard_nobody=True)
    assert still.deaf and not may_declare(still, 30)
    again = check(still, 45)
    assert again == Hearing(checked_at=T0 + timedelta(seconds=45), deaf=False, hearing_since=T0 + timedelta(seconds=45))
    assert not may_declare(again, 45)
    later = check(again, 90)
    assert later.hearing_since == again.hearing_since and not may_declare(later, 90)
    assert may_declare(check(later, 105), 105)  # one full timeout after it heard again


def test_a_detector_that_did_not_run_for_the_timeout_presumes_itself_away():
    ran = check(Hearing(), 0)
    assert may_declare(check(ran, 60), 60)  # a timeout apart: still its own rhythm
    gap = check(ran, 61)
    assert gap.deaf and not may_declare(gap, 61)
    back = check(gap, 76)
    assert not may_declare(back, 76) and may_declare(check(back, 136), 136)


def test_a_slow_detector_period_is_not_a_gap():
    """Beat runs the detector every max(5 s, T/4): with T = 1 s, 5 s between runs is normal."""
    ran = hearing_after_check(Hearing(), now=T0, timeout_s=1, check_every_s=5, heard_nobody=False)
    later = hearing_after_check(ran, now=T0 + timedelta(seconds=6), timeout_s=1, check_every_s=5, heard_nobody=False)
    assert not later.deaf and silence_may_be_declared(later, now=later.checked_at, timeout_s=1)
