"""Inventory endpoints: declarations plus the agents' and operators' actions; rules live in
serializers and services."""
from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import IsAdminUser
from rest_framework.response import Response

from gogh_web.api.errors import Conflict
from gogh_web.api.permissions import IsAgentOrStaff

from .. import selectors, services
from ..lifecycle import IllegalTransition, fence_after_s
from ..models import NodeState
from ..services.admission import node_approve, node_revoke
from .filters import GpuFilter, NodeFilter
from .serializers import (
    EmptyBodySerializer,
    GpuFailureReportSerializer,
    GpuSerializer,
    HeartbeatReportSerializer,
    HeartbeatSerializer,
    NodeGpuSerializer,
    NodeRegistrationSerializer,
    NodeSerializer,
    NodeStateChangeSerializer,
)


class NodeViewSet(viewsets.ReadOnlyModelViewSet):
    """Nodes with their GPUs, for every signed-in user; agents register, heartbeat, read their
    assignments and leave; staff drain, approve and revoke."""

    # The assignments (GET nodes/{id}/assignments/) are the scheduler's: scheduler.dispatch.api.

    serializer_class = NodeSerializer
    filterset_class = NodeFilter
    ordering_fields = ["hostname", "state", "cell", "last_heartbeat", "registered_at"]
    lookup_value_regex = r"\d+"

    def get_queryset(self):
        return selectors.nodes_with_gpus() if self.action in ("list", "retrieve") else selectors.nodes()

    def _detail(self, node, status_code=status.HTTP_200_OK):
        return Response(NodeSerializer(selectors.nodes_with_gpus().get(pk=node.pk)).data, status=status_code)

    @extend_schema(request=NodeRegistrationSerializer, responses={200: NodeSerializer, 201: NodeSerializer})
    @action(detail=False, methods=["post"], permission_classes=[IsAgentOrStaff])
    def register(self, request):
        """Create (201) or update (200) the node and its GPUs from the agent's report."""
        report = NodeRegistrationSerializer(data=request.data)
        report.is_valid(raise_exception=True)
        node, created = services.node_register(agent_user=request.user, **report.validated_data)
        answer = self._detail(node, status.HTTP_201_CREATED if created else status.HTTP_200_OK)
        answer.data.update(_fencing())
        return answer

    @extend_schema(request=HeartbeatReportSerializer, responses={200: HeartbeatSerializer})
    @action(detail=True, methods=["post"], permission_classes=[IsAgentOrStaff])
    def heartbeat(self, request, pk=None):
        """The node's agent is alive; the answer says whether the node takes work."""
        body = HeartbeatReportSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        node = services.node_heartbeat(node=self.get_object(), agent_user=request.user,
                                       driver_version=body.validated_data.get("driver_version"),
                                       power_limits=body.validated_data.get("gpus"))
        return Response({**HeartbeatSerializer(node).data, **_fencing()})

    @extend_schema(request=None, responses={200: HeartbeatSerializer})
    @action(detail=True, methods=["post"], permission_classes=[IsAgentOrStaff])
    def leave(self, request, pk=None):
        """The node's agent is shutting down: the node goes down now, its jobs back to pending."""
        EmptyBodySerializer(data=request.data).is_valid(raise_exception=True)
        node = services.node_leave(node=self.get_object(), agent_user=request.user)
        return Response(HeartbeatSerializer(node).data)

    @extend_schema(request=None, responses={200: HeartbeatSerializer})
    @action(detail=True, methods=["post"], permission_classes=[IsAgentOrStaff])
    def leaving(self, request, pk=None):
        """The node's agent is about to stop its jobs and leave: the node takes no new work."""
        EmptyBodySerializer(data=request.data).is_valid(raise_exception=True)
        node = services.node_leaving(node=self.get_object(), agent_user=request.user)
        return Response(HeartbeatSerializer(node).data)

    @extend_schema(request=GpuFailureReportSerializer, responses={200: NodeGpuSerializer(many=True)})
    @action(detail=True, methods=["post"], permission_classes=[IsAgentOrStaff], url_path="gpu-failures")
    def gpu_failures(self, request, pk=None):
        """The node's agent reports GPUs that died: they are marked failed (an operator makes
        them healthy again) and their jobs go back to pending, to be placed elsewhere."""
        report = GpuFailureReportSerializer(data=request.data)
        report.is_valid(raise_exception=True)
        gpus = services.gpus_report_failed(
            node=self.get_object(), agent_user=request.user, failures=report.validated_data["gpus"]
        )
        return Response(NodeGpuSerializer(gpus, many=True).data)

    @extend_schema(request=None, responses={200: NodeSerializer})
    @action(detail=True, methods=["post"], permission_classes=[IsAdminUser])
    def approve(self, request, pk=None):
        """Admit the node (staff): the scheduler places jobs on it from the next round."""
        EmptyBodySerializer(data=request.data).is_valid(raise_exception=True)
        return self._detail(node_approve(node=self.get_object(), by=request.user))

    @extend_schema(request=NodeStateChangeSerializer, responses={200: NodeSerializer})
    @action(detail=True, methods=["post"], permission_classes=[IsAdminUser])
    def revoke(self, request, pk=None):
        """Withdraw the node's approval (staff): its jobs go back to pending, it receives none."""
        change = NodeStateChangeSerializer(data=request.data)
        change.is_valid(raise_exception=True)
        node = node_revoke(node=self.get_object(), by=request.user, reason=change.validated_data["reason"])
        return self._detail(node)

    @extend_schema(request=NodeStateChangeSerializer, responses={200: NodeSerializer})
    @action(detail=True, methods=["post"], permission_classes=[IsAdminUser])
    def drain(self, request, pk=None):
        """Stop placing work on the node (staff)."""
        return self._set_state(request, NodeState.DRAINING, default_reason=f"drained by {request.user.username}")

    @extend_schema(request=NodeStateChangeSerializer, responses={200: NodeSerializer})
    @action(detail=True, methods=["post"], permission_classes=[IsAdminUser])
    def undrain(self, request, pk=None):
        """Place work on the node again (staff)."""
        return self._set_state(request, NodeState.READY, default_reason="")

    def _set_state(self, request, state, default_reason):
        change = NodeStateChangeSerializer(data=request.data)
        change.is_valid(raise_exception=True)
        try:
            node = services.node_set_state(
                node=self.get_object(), state=state, reason=change.validated_data["reason"] or default_reason
            )
        except IllegalTransition as exc:
            raise Conflict(str(exc)) from exc
        return self._detail(node)


def _fencing() -> dict:
    """What an agent needs to stop its jobs before this control plane gives its node up and
    places them elsewhere (telemetry.lifecycle, docs/agent.md): the agent fences at the lower
    of this and its own --fence-after, so the two configurations need not agree."""
    timeout = settings.GOGH_NODE_HEARTBEAT_TIMEOUT_S
    return {"heartbeat_timeout_s": timeout, "fence_after_s": fence_after_s(timeout)}


class GpuViewSet(viewsets.ReadOnlyModelViewSet):
    """Every GPU of the cluster, for every signed-in user."""

    queryset = selectors.gpus()
    serializer_class = GpuSerializer
    filterset_class = GpuFilter
    ordering_fields = ["node__hostname", "index", "state"]
    lookup_value_regex = r"\d+"

    @extend_schema(request=None, responses={200: GpuSerializer})
    @action(detail=True, methods=["post"], permission_classes=[IsAdminUser], url_path="clear-at-risk")
    def clear_at_risk(self, request, pk=None):
        """Clear the GPU's at-risk flag (staff): its current error counts become its baseline
        (docs/gpu_health.md). 409 where it is not at risk."""
        EmptyBodySerializer(data=request.data).is_valid(raise_exception=True)
        try:
            gpu = services.gpu_at_risk_clear(gpu=self.get_object(), by=request.user)
        except services.NotAtRisk as exc:
            raise Conflict(str(exc)) from exc
        return Response(GpuSerializer(selectors.gpus().get(pk=gpu.pk), context={"request": request}).data)
