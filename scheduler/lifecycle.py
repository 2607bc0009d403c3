"""The job state machine, as plain data (no Django): which moves are legal.

    pending --> placed --> running --> succeeded
       |          |           |  \\--> failed
       |          |           +-----> pending   (preempted, node down, migrated)
       |          +-----------------> pending   (allocation withdrawn before start)
       +----------+-----------+-----> cancelled
    pending/placed ------------------> failed    (e.g. could not start)

Terminal states never change again.
"""
from enum import Enum


class JobState(str, Enum):
    PENDING = "pending"
    PLACED = "placed"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


TERMINAL = frozenset({JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED})

TRANSITIONS: dict[JobState, frozenset[JobState]] = {
    JobState.PENDING: frozenset({JobState.PLACED, JobState.CANCELLED, JobState.FAILED}),
    JobState.PLACED: frozenset({JobState.RUNNING, JobState.PENDING, JobState.CANCELLED, JobState.FAILED}),
    JobState.RUNNING: frozenset(
        {JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED, JobState.PENDING}
    ),
    JobState.SUCCEEDED: frozenset(),
    JobState.FAILED: frozenset(),
    JobState.CANCELLED: frozenset(),
}


class IllegalTransition(ValueError):
    """Raised for a move the state machine does not allow."""

    def __init__(self, current: str, target: str):
        self.current, self.target = current, target
        super().__init__(f"A {current} job cannot become {target}.")


def check_transition(current: str, target: str) -> None:
    if JobState(target) not in TRANSITIONS[JobState(current)]:
        raise IllegalTransition(current, target)
