"""The job state machine: legal moves pass, illegal ones are refused, terminal is final."""
import pytest

from scheduler.lifecycle import TERMINAL, TRANSITIONS, IllegalTransition, JobState, check_transition

LEGAL = [
    ("pending", "placed"), ("placed", "running"), ("running", "succeeded"), ("running", "failed"),
    ("running", "pending"), ("placed", "pending"), ("pending", "cancelled"), ("placed", "cancelled"),
    ("running", "cancelled"), ("pending", "failed"),
    # late success: the node that last held a requeued job reports it ran to its end
    ("pending", "succeeded"), ("placed", "succeeded"),
]
ILLEGAL = [
    ("pending", "running"), ("succeeded", "pending"), ("succeeded", "failed"), ("failed", "succeeded"),
    ("failed", "running"), ("cancelled", "pending"), ("cancelled", "cancelled"), ("running", "placed"),
]


@pytest.mark.parametrize("current,target", LEGAL)
def test_legal_moves_pass(current, target):
    check_transition(current, target)


@pytest.mark.parametrize("current,target", ILLEGAL)
def test_illegal_moves_are_refused(current, target):
    with pytest.raises(IllegalTransition, match=f"A {current} job cannot become {target}"):
        check_transition(current, target)


def test_terminal_states_have_no_way_out():
    assert all(not TRANSITIONS[state] for state in TERMINAL)
    assert set(TRANSITIONS) == set(JobState)
