"""Agents' telemetry endpoint (/api/telemetry/samples/); rules live in services."""
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from gogh_web.api.permissions import IsAgentOrStaff

from .. import services
from .telemetry_serializers import SampleBatchResultSerializer, SampleBatchSerializer, field_paths


class SampleUploadView(APIView):
    """POST /api/telemetry/samples/: a batch of GPU samples from the node's agent."""

    permission_classes = [IsAgentOrStaff]

    @extend_schema(request=SampleBatchSerializer, responses={201: SampleBatchResultSerializer})
    def post(self, request):
        """All or nothing: a batch with one bad sample is refused whole (400, errors by path)."""
        batch = SampleBatchSerializer(data=request.data)
        if not batch.is_valid():
            raise ValidationError(field_paths(batch.errors))
        accepted = services.gpu_samples_ingest(agent_user=request.user, **batch.validated_data)
        return Response({"accepted": accepted}, status=status.HTTP_201_CREATED)
