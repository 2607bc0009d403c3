"""The job state machine, as plain data (no Django): which moves are legal.

    pending --> placed --> running --> succeeded
       |          |           |  \\--> failed
       |          |           +-----> pending   (preempted, node down, migrated)
       |          +-----------------> pending   (allocation withdrawn before start)
       +----------+-----------+-----> cancelled
    pending/placed ------------------> failed    (e.g. could not start)
    pending/placed ------------------> succeeded (late success, below)

Late success: a node the control plane gave up on (silent, so its jobs went back to pending)
may still have run a job to its end and report so after the requeue. The work is done: a
success report from the node that last held the job ends it as succeeded, whether it waits
pending or a new copy is already placed (or running: running --> succeeded as usual); the new
copy's allocations close with it, so its agent stops it. Only success: a late failure leaves
the job to run again.

Terminal states never change again.
"""
from enum import Enum


class JobState(str, Enum):  # noqa: UP042 -- StrEnum would change str() and format() of a state
    PENDING = "pending"
    PLACED = "placed"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


TERMINAL = frozenset({JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED})

TRANSITIONS: dict[JobState, frozenset[JobState]] = {
    JobState.PENDING: frozenset({JobState.PLACED, JobState.CANCELLED, JobState.FAILED, JobState.SUCCEEDED}),
    JobState.PLACED: frozenset(
        {JobState.RUNNING, JobState.PENDING, JobState.CANCELLED, JobState.FAILED, JobState.SUCCEEDED}
    ),
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
