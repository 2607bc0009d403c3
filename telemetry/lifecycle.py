"""Node and GPU state rules, as plain data (no Django): which moves are legal and who makes them.

Nodes:

    register --> ready <--drain/undrain--> draining
                   |                          |
                   +--- silent or marked ---> down --- agent reports again ---> ready

- Agents move a node only by reporting (registration, heartbeat): a down node becomes ready;
  ready and draining stay as they are, so an agent restart never undoes an operator's drain.
- Operators drain, undrain and mark down. A down node cannot be drained or undrained: down
  says the control plane cannot hear the node, and only the node's agent can change that.

GPUs: agents toggle healthy <-> missing by reporting a device or not; operators disable,
mark failed and re-enable. A missing GPU is beyond operators until its agent reports it.
The state values equal telemetry.models.NodeState / GpuState (a test keeps them equal).
"""
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


def node_state_after_report(current: str) -> str:
    """The state of a node whose agent has just registered or heartbeated."""
    return READY if current == DOWN else current


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
