"""JSON endpoints of the Trade-off page: thin DRF views that validate and call a service.
Session authentication enforces CSRF on the POSTs; apply answers 403 to anyone but staff."""
from dataclasses import asdict

from drf_spectacular.utils import extend_schema
from rest_framework.permissions import IsAdminUser
from rest_framework.response import Response
from rest_framework.views import APIView

from scheduler.models import SolverConfig

from . import services
from .serializers import PreviewSerializer, SweepPointSerializer, SweepSerializer, TradeoffSettingsSerializer


def settings_data(config) -> dict:
    return {field: getattr(config, field) for field in services.TRADEOFF_FIELDS}


class TradeoffSweepView(APIView):
    @extend_schema(responses={200: SweepSerializer}, summary="Pareto sweep of the current cluster state")
    def get(self, request):
        """The sweep of the cluster as it is now; started on first request, cached per state."""
        sweep = services.tradeoff_sweep_for_current_state()
        points = list(sweep.points.order_by("index").values(*SweepPointSerializer().fields))
        config = SolverConfig.load()
        data = {
            "sweep": sweep.pk, "state_digest": sweep.state_digest, "complete": len(points) >= sweep.points_expected,
            "points_expected": sweep.points_expected, "surplus_value_w": sweep.surplus_value_w, "points": points,
            "current": asdict(services.sweep_current_point(sweep)),
            "settings": {**settings_data(config), "throughput_value_w": sweep.surplus_value_w},
            "can_apply": request.user.is_staff,
        }
        return Response(SweepSerializer(data).data)


class TradeoffPreviewView(APIView):
    @extend_schema(request=TradeoffSettingsSerializer, responses={200: PreviewSerializer})
    def post(self, request):
        """A dry-run solve with the given settings: which jobs would move, and the totals."""
        body = TradeoffSettingsSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        preview = services.tradeoff_preview(user=request.user, values=body.validated_data)
        data = {
            **asdict(preview),
            "moves": [
                {"job": int(m.job_id), "kind": m.kind, "from_gpus": [int(g) for g in m.from_gpus],
                 "to_gpus": [int(g) for g in m.to_gpus]}
                for m in preview.moves
            ],
        }
        return Response(PreviewSerializer(data).data)


class TradeoffApplyView(APIView):
    permission_classes = [IsAdminUser]

    @extend_schema(request=TradeoffSettingsSerializer, responses={200: TradeoffSettingsSerializer})
    def post(self, request):
        """Make the settings live (staff only; every changed field is audited)."""
        body = TradeoffSettingsSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        config = services.tradeoff_apply(by=request.user, values=body.validated_data)
        return Response(TradeoffSettingsSerializer(settings_data(config)).data)
