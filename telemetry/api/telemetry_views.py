"""Agents' telemetry endpoints (/api/telemetry/...) and /metrics; rules live in services."""
from drf_spectacular.utils import extend_schema
from rest_framework import renderers, status
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import BasePermission
from rest_framework.response import Response
from rest_framework.views import APIView

from gogh_web.api.errors import Conflict
from gogh_web.api.permissions import IsAgentOrStaff

from .. import metrics, services
from .telemetry_serializers import (
    JobProgressSerializer,
    SampleBatchResultSerializer,
    SampleBatchSerializer,
    field_paths,
)

METRICS_PERMISSION = "telemetry.view_gpusample"


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


class JobProgressView(APIView):
    """POST /api/telemetry/job-progress/: progress or the end of a job running on the agent's node."""

    permission_classes = [IsAgentOrStaff]

    @extend_schema(request=JobProgressSerializer, responses={200: None})
    def post(self, request):
        report = JobProgressSerializer(data=request.data)
        report.is_valid(raise_exception=True)
        data = dict(report.validated_data)
        try:
            job = services.job_progress_report(agent_user=request.user, job_id=data.pop("job"), **data)
        except services.NotAssigned as exc:
            raise Conflict(str(exc)) from exc
        return Response({"job": job.pk, "state": job.state, "steps_done": job.steps_done})


class PrometheusRenderer(renderers.BaseRenderer):
    """The metrics as they are; an error (401, 403, 405, 429) as its message in plain text,
    not the Python repr of DRF's {"detail": ErrorDetail(...)}."""

    media_type = "text/plain"
    format = "txt"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        if isinstance(data, bytes):
            return data
        if isinstance(data, dict) and "detail" in data:
            data = data["detail"]
        return f"{data}\n".encode()


class CanReadMetrics(BasePermission):
    """Staff, or an account given the permission telemetry.view_gpusample (e.g. Prometheus's)."""

    def has_permission(self, request, view):
        user = request.user
        return bool(user and user.is_authenticated and (user.is_staff or user.has_perm(METRICS_PERMISSION)))


class MetricsView(APIView):
    """GET /metrics: Prometheus text format (docs/telemetry.md)."""

    permission_classes = [CanReadMetrics]
    renderer_classes = [PrometheusRenderer]

    @extend_schema(exclude=True)
    def get(self, request):
        return Response(metrics.render(), content_type="text/plain; version=0.0.4; charset=utf-8")
