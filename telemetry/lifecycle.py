"""Node and GPU state rules, as plain data (no Django): which moves are legal and who makes them.

Nodes:

    register --> ready <--drain/undrain--> draining
                   |                          |
                   +--- silent or marked ---> down --- agent reports again ---> ready, or
                                                                                draining if drained

- Agents move a node only by reporting (registration, heartbeat): a down node comes back
  draining when an operator drained it (Node.drained, kept across down and back) and ready
  otherwise; ready and draining stay as they are, so neither an agent restart nor a flap
  undoes an operator's drain.
- Operators drain, undrain and mark down. A down node cannot be drained or undrained: down
  says the control plane cannot hear the node, and only the node's agent can change that.

Silence and fencing (a job never runs on two nodes): the control plane gives a node up when it
has heard no heartbeat for its timeout T (GOGH_NODE_HEARTBEAT_TIMEOUT_S) and only then sends
the node's jobs back to pending. Its agent, out of touch, stops those jobs first: the
heartbeat and registration answers carry fence_after_s (fence_after_s() of T), the time after
its last successful heartbeat by which the agent must have stopped its jobs (SIGTERM that long
less its grace period, SIGKILL at it). A control plane that could not hear anybody (its web or
database away, or the detector itself not run) presumes that it was away, not every node, and
gives the agents one full T after it hears again (hearing_after_check).

GPUs: agents toggle healthy <-> missing by reporting a device or not; operators disable,
mark failed and re-enable. A missing GPU is beyond operators until its agent reports it.
The state values equal telemetry.models.NodeState / GpuState (a test keeps them equal).
"""
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

READY, DRAINING, DOWN = "ready", "draining", "down"
NODE_STATES = frozenset({READY, DRAINING, DOWN})

HEALTHY, FAILED, DISABLED, MISSING = "healthy", "failed", "disabled", "missing"
GPU_STATES = frozenset({HEALTHY, FAILED, DISABLED, MISSING})

#: Operator moves of a node: current state -> states it may be set to (same state: a no-op).
NODE_OPERATOR_MOVES: dict[str, frozenset[str]] = {
    READY: frozenset({READY, DRAINING, DOWN}),
    DRAINING: frozenset({READY, DRAINING, DOWN}),
    DOWN: frozenset({DOWN}),
}

#: Operator moves of a GPU; missing GPUs are left to their agent.
GPU_OPERATOR_MOVES: dict[str, frozenset[str]] = {
    HEALTHY: frozenset({HEALTHY, FAILED, DISABLED}),
    FAILED: frozenset({HEALTHY, FAILED, DISABLED}),
    DISABLED: frozenset({HEALTHY, FAILED, DISABLED}),
    MISSING: frozenset({MISSING}),
}

#: Node states whose agent is expected to heartbeat (the others are already down).
NODE_STATES_WATCHED = frozenset({READY, DRAINING})


class IllegalTransition(ValueError):
    """Raised for a move the rules above do not allow."""

    def __init__(self, what: str, current: str, target: str, why: str):
        self.current, self.target = current, target
        super().__init__(f"A {current} {what} cannot be set to {target}: {why}")


def node_state_after_report(current: str, *, drained: bool) -> str:
    """The state of a node whose agent has just registered or heartbeated: a down node comes
    back draining if an operator drained it (a flap must not undo a drain), ready otherwise.
    A node draining without an operator's drain was draining because its agent was leaving
    (telemetry.services.node_leaving): its agent reporting again means it is back, ready."""
    if current == READY or (current == DRAINING and drained):
        return current
    return DRAINING if drained else READY


def fence_margin_s(timeout_s: float) -> float:
    """What the fence keeps between the agent's jobs being gone and the control plane giving
    the node up: the agent's loop tick, a SIGKILLed process taking a moment to go on a loaded
    machine, clocks that drift. A tenth of the timeout, at least 2 s."""
    return max(2.0, timeout_s / 10)


def fence_after_s(timeout_s: float) -> float:
    """Seconds after its last successful heartbeat by which an agent must have stopped its
    jobs, for a control plane that gives a silent node up after `timeout_s`. The agent counts
    from when it sent that heartbeat, which is never later than when the control plane
    recorded it, so request latency only adds to the margin."""
    return timeout_s - fence_margin_s(timeout_s)


@dataclass(frozen=True)
class Hearing:
    """What the silence detector remembers between runs: when it last ran, whether it then
    heard nobody (or had not run for too long), and since when it hears again."""

    checked_at: datetime | None = None
    deaf: bool = False
    hearing_since: datetime | None = None


def hearing_after_check(
    previous: Hearing, *, now: datetime, timeout_s: float, check_every_s: float, heard_nobody: bool
) -> Hearing:
    """The detector's memory after a run at `now`. It presumes the control plane away, not
    the nodes, when it heard no heartbeat from any of two or more watched nodes for the whole
    timeout (`heard_nobody`: nodes rarely all die at once; one node's silence says nothing of
    the control plane), or when it did not run itself for longer than the timeout (or two of
    its periods, whichever is longer). While away it is deaf; the first run that hears again
    starts a fresh timeout for everyone (hearing_since)."""
    gap = previous.checked_at is not None and now - previous.checked_at > timedelta(
        seconds=max(timeout_s, 2 * check_every_s)
    )
    if gap or heard_nobody:
        return Hearing(checked_at=now, deaf=True, hearing_since=None)
    if previous.deaf:
        return Hearing(checked_at=now, deaf=False, hearing_since=now)
    return replace(previous, checked_at=now)


def silence_may_be_declared(hearing: Hearing, *, now: datetime, timeout_s: float) -> bool:
    """Whether a node silent for the timeout may be given up now: not while the control plane
    is deaf, nor before it has heard again for one full timeout."""
    if hearing.deaf:
        return False
    return hearing.hearing_since is None or now - hearing.hearing_since >= timedelta(seconds=timeout_s)


def check_node_operator_move(current: str, target: str) -> None:
    if target not in NODE_OPERATOR_MOVES[current]:
        raise IllegalTransition(
            "node", current, target, "it becomes ready again when its agent reports (heartbeat or registration)."
        )


def check_gpu_operator_move(current: str, target: str) -> None:
    if target not in GPU_OPERATOR_MOVES[current]:
        why = (
            "its agent no longer reports it; it becomes healthy when the agent reports it again."
            if current == MISSING
            else "missing is set only by registration."
        )
        raise IllegalTransition("GPU", current, target, why)
