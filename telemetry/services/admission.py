"""Admission of nodes: a node that an agent account registers receives no jobs (and so no
tenant's command or environment) until an operator approves it.

An agent token proves only that its holder may report; it says nothing about the machine. Any
holder could register a node of its choosing and be sent other tenants' jobs within seconds, so
a node must be approved before the optimiser sees its GPUs and before its agent reads its
assignments. Approval is of a node held by one agent account: the node keeps it across its
agent's re-registrations, restarts and heartbeats, and loses it when another agent account
claims the node (credential rotation: the operator approves the new holder).

Approved without a click: nodes registered by staff (approved by them), nodes whose host name
matches GOGH_AUTO_APPROVE_NODES (a trust decision of the operator, see docs/inventory.md) and
nodes approved by `manage.py approve_node` or `load_demo_cluster`. Approvals and revocations by
a person are written to the admin's history (LogEntry) as well as to the node's fields.
"""
import logging
from fnmatch import fnmatchcase

from django.conf import settings
from django.contrib.admin.models import CHANGE, LogEntry
from django.db import transaction
from django.utils import timezone

from .. import live, signals
from ..models import Node

log = logging.getLogger(__name__)


def hostname_preapproved(hostname: str) -> bool:
    """Whether `hostname` (normalised: lower case) matches one of GOGH_AUTO_APPROVE_NODES."""
    return any(fnmatchcase(hostname, pattern.lower()) for pattern in settings.GOGH_AUTO_APPROVE_NODES)


def admission_at_registration(*, node: Node, agent_user, created: bool, now) -> bool:
    """Set the approval of `node` (not saved) for a registration by `agent_user`; whether the
    node lost an approval it had, so that its jobs must go back to pending.

    Staff approve what they register. An agent account keeps the approval of a node it already
    held; a new node, or one it claims from no agent, waits for an operator unless its host
    name is pre-approved."""
    if agent_user.is_staff:
        if node.approved_at is None:
            node.approved_at, node.approved_by = now, agent_user
        return False
    claimed = not created and node.agent_id != agent_user.pk
    was_approved = node.approved_at is not None
    if created or claimed:
        node.approved_at, node.approved_by = None, None
    if node.approved_at is None and hostname_preapproved(node.hostname):
        node.approved_at = now
        log.info("node %s approved by GOGH_AUTO_APPROVE_NODES", node.hostname)
    return claimed and was_approved and node.approved_at is None


@transaction.atomic
def node_approve(*, node: Node, by=None) -> Node:
    """Admit `node`: its GPUs are offered to the next round. `by`: the operator (None for a
    command or configuration). Approving an approved node changes nothing."""
    node = Node.objects.select_for_update().get(pk=node.pk)
    if node.approved_at is not None:
        return node
    node.approved_at, node.approved_by = timezone.now(), by
    node.save(update_fields=["approved_at", "approved_by", "updated_at"])
    _audit(node, by, "Approved: the node receives jobs.")
    live.node_changed(node.pk)
    signals.capacity_changed.send(sender=Node)  # new capacity
    return node


@transaction.atomic
def node_revoke(*, node: Node, by, reason: str = "") -> Node:
    """Withdraw the approval of `node`: its placed and running jobs go back to pending, exactly
    once (a second revocation finds the node unapproved and its jobs gone), and its agent reads
    no assignments until an operator approves the node again."""
    node = Node.objects.select_for_update().get(pk=node.pk)
    if node.approved_at is None:
        return node
    node.approved_at, node.approved_by = None, None
    node.save(update_fields=["approved_at", "approved_by", "updated_at"])
    who = by.get_username() if by is not None else "an operator"
    _audit(node, by, f"Approval revoked{': ' + reason if reason else ''}.")
    live.node_changed(node.pk)
    signals.nodes_lost.send(sender=Node, node_ids=[node.pk], reason=reason or f"approval revoked by {who}")
    return node


def _audit(node: Node, by, message: str) -> None:
    """The admin's history of the node records who approved or revoked it, and when."""
    if by is None:
        log.info("node %s: %s", node.hostname, message)
        return
    LogEntry.objects.log_actions(by.pk, Node.objects.filter(pk=node.pk), CHANGE, change_message=message,
                                 single_object=True)
