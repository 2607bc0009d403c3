"""Permissions shared across apps."""
from rest_framework.permissions import SAFE_METHODS, BasePermission

AGENT_PERMISSION = "telemetry.act_as_agent"


class IsStaffOrReadOnly(BasePermission):
    """Any signed-in user reads; only staff change (GPU types, workloads)."""

    def has_permission(self, request, view):
        return bool(request.user and request.user.is_authenticated) and (
            request.method in SAFE_METHODS or request.user.is_staff
        )


class IsAgentOrStaff(BasePermission):
    """Node agents (users holding telemetry.act_as_agent) and staff register nodes and report."""

    def has_permission(self, request, view):
        user = request.user
        return bool(user and user.is_authenticated) and (user.is_staff or user.has_perm(AGENT_PERMISSION))


class ReadOrAgentWrite(BasePermission):
    """Signed-in users read; only agents and staff write (measurements)."""

    def has_permission(self, request, view):
        user = request.user
        if not (user and user.is_authenticated):
            return False
        return request.method in SAFE_METHODS or user.is_staff or user.has_perm(AGENT_PERMISSION)


class PersonNotAgent(BasePermission):
    """Signed-in people, not node agents: an agent's token reports telemetry; it has no business
    with the console's endpoints (a trade-off sweep queues 21 solves on the workers)."""

    def has_permission(self, request, view):
        user = request.user
        return bool(user and user.is_authenticated) and (user.is_superuser or not user.has_perm(AGENT_PERMISSION))
