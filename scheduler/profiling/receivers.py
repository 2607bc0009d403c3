"""Nodes' reports start profiling campaigns (telemetry.signals.node_reported, connected by
SchedulerConfig.ready). In the sender's transaction: a campaign starts with the report that
showed it was due, or not at all."""
from telemetry import signals

from .services import campaigns_for_node


def connect() -> None:
    signals.node_reported.connect(_node_reported, dispatch_uid="profiling-node-reported")


def _node_reported(sender, *, node, **kwargs) -> None:
    """Only an approved node's report counts: a node nobody admitted makes the control plane do nothing."""
    if node.approved_at is not None:
        campaigns_for_node(node=node)
