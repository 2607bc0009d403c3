"""The live snapshot: where a page starts before it follows the WebSocket."""
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from .. import selectors


class SnapshotView(APIView):
    """Everything a live page shows that the caller may see, and the id of the newest event it
    reflects: open `/ws/live/?after=<event_id>` next. Shape: {"event_id": N, "state": {kind:
    {key: object}}} for the kinds job (own tenant; staff all), node, gpu, solve_run,
    solver_config and predictor_version (docs/live-updates.md)."""

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request):
        return Response(selectors.snapshot(selectors.viewer_for(request.user)))
