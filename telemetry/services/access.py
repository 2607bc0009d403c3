"""Who may report for what: the agent credential model, in one place for every service.

An agent account (permission telemetry.act_as_agent) reports only for the nodes it
registered: heartbeats, samples of their GPUs, progress of jobs allocated to them, and catalog
measurements of what runs there (the last two are the scheduler's rules, scheduler.dispatch,
built on these). Staff may do everything an agent does.
"""
from django.core.exceptions import PermissionDenied

from gogh_web.api.permissions import AGENT_PERMISSION

from ..models import Node


def check_is_agent(user) -> None:
    if not (user.is_staff or user.has_perm(AGENT_PERMISSION)):
        raise PermissionDenied(f"Only node agents (permission {AGENT_PERMISSION}) and staff report for nodes.")


def may_report(node: Node, user) -> bool:
    return bool(user.is_staff or node.agent_id == user.pk)


def check_may_report(node: Node, user) -> None:
    check_is_agent(user)
    if not may_report(node, user):
        raise PermissionDenied(
            f"Only the agent account that registered node {node.hostname} (or staff) reports for it."
        )
