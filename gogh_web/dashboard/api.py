"""JSON endpoints of the Trade-off page: thin DRF views that validate and call a service or a
selector. Session authentication enforces CSRF on the POSTs; apply answers 403 to anyone but
staff, the others to node agents; preview, which solves in the request, is throttled per user."""
from dataclasses import asdict

from django.conf import settings
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.permissions import IsAdminUser
from rest_framework.response import Response
from rest_framework.throttling import UserRateThrottle
from rest_framework.views import APIView

from gogh_web.api.permissions import PersonNotAgent

from . import selectors, services
from .models import TradeoffSweep
from .serializers import PreviewSerializer, SweepSerializer, TradeoffApplySerializer, TradeoffSettingsSerializer


class PreviewThrottle(UserRateThrottle):
    """GOGH_DASHBOARD_PREVIEW_RATE previews per user (DRF's rate syntax, e.g. "10/min"),
    counted in Django's cache (per process with the default local-memory cache)."""

    scope = "dashboard_preview"

    def get_rate(self):
        return settings.GOGH_DASHBOARD_PREVIEW_RATE


class TradeoffSweepView(APIView):
    permission_classes = [PersonNotAgent]
    @extend_schema(request=None, responses={200: SweepSerializer, 201: SweepSerializer},
                   summary="Start (or find) the Pareto sweep of the current cluster state")
    def post(self, request):
        """The sweep of the cluster as it is now: created and sent to the workers when the state
        is new (201), the cached one otherwise (200); a failed one is replaced (retried)."""
        sweep, created = services.tradeoff_sweep_for_current_state()
        data = SweepSerializer(selectors.sweep_data(sweep, request.user)).data
        return Response(data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class TradeoffSweepDetailView(APIView):
    permission_classes = [PersonNotAgent]
    @extend_schema(responses={200: SweepSerializer}, summary="A sweep's points so far (read-only; the page polls it)")
    def get(self, request, pk: int):
        sweep = get_object_or_404(TradeoffSweep, pk=pk)
        return Response(SweepSerializer(selectors.sweep_data(sweep, request.user)).data)


class TradeoffPreviewView(APIView):
    permission_classes = [PersonNotAgent]
    throttle_classes = [PreviewThrottle]

    @extend_schema(request=TradeoffSettingsSerializer, responses={200: PreviewSerializer})
    def post(self, request):
        """A dry-run solve with the given settings (the others as stored), with a short time
        limit: which jobs would move, and the totals."""
        body = TradeoffSettingsSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        preview = services.tradeoff_preview(user=request.user, values=body.validated_data)
        data = {
            **asdict(preview),
            "moves": [move_data(m) for m in preview.moves],
            "hidden_change": dict(zip(("throughput", "power_w"), preview.hidden_change)),
        }
        return Response(PreviewSerializer(data).data)


def move_data(move) -> dict:
    """A tradeoff.Move as the API names it (ids as numbers, figures by name)."""
    def ids(values):
        return [int(v) for v in values]

    return {
        "job": int(move.job_id), "kind": move.kind, "from_gpus": ids(move.from_gpus), "to_gpus": ids(move.to_gpus),
        "from_partners": ids(move.from_partners), "to_partners": ids(move.to_partners),
        "from_type": move.from_type, "to_type": move.to_type,
        "from_throughput": move.from_served[0], "to_throughput": move.to_served[0],
        "from_power_w": move.from_served[1], "to_power_w": move.to_served[1],
    }


class TradeoffApplyView(APIView):
    permission_classes = [IsAdminUser]

    @extend_schema(request=TradeoffApplySerializer, responses={200: TradeoffSettingsSerializer})
    def post(self, request):
        """Make the given settings live (staff only; every changed field is audited); the
        fields not given stay as they are."""
        body = TradeoffApplySerializer(data=request.data)
        body.is_valid(raise_exception=True)
        config = services.tradeoff_apply(by=request.user, values=body.validated_data)
        return Response(TradeoffSettingsSerializer({f: getattr(config, f) for f in selectors.TRADEOFF_FIELDS}).data)
