"""Agents' telemetry endpoints (/api/telemetry/...) and /metrics; rules live in services."""
from django.core.exceptions import PermissionDenied, ValidationError as DjangoValidationError
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
    JobProgressBatchResultSerializer,
    JobProgressBatchSerializer,
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


class JobProgressBatchView(APIView):
    """POST /api/telemetry/job-progress/batch/: the reports of all the node's jobs in one request.
    An agent sends one a turn, so a slow control plane costs it one request, not one per job."""

    permission_classes = [IsAgentOrStaff]

    @extend_schema(request=JobProgressBatchSerializer, responses={200: JobProgressBatchResultSerializer})
    def post(self, request):
        """200 with one answer per report, each in its own transaction: one job's 409 (no longer
        allocated here) or 400 does not refuse the others. A body that is not a list of reports: 400."""
        batch = JobProgressBatchSerializer(data=request.data)
        if not batch.is_valid():
            raise ValidationError(field_paths(batch.errors))
        return Response({"results": [_progress_answer(request.user, item) for item in batch.validated_data["reports"]]})


def _progress_answer(user, item: dict) -> dict:
    """One report of a batch, answered as POST /api/telemetry/job-progress/ answers it alone."""
    report = JobProgressSerializer(data=item)
    if not report.is_valid():
        named = item.get("job")
        job_id = named if isinstance(named, int) and not isinstance(named, bool) and named >= 1 else None
        return {"job": job_id, "status": status.HTTP_400_BAD_REQUEST, "errors": field_paths(report.errors)}
    data = dict(report.validated_data)
    job_id = data.pop("job")
    try:
        job = services.job_progress_report(agent_user=user, job_id=job_id, **data)
    except services.NotAssigned as exc:
        return {"job": job_id, "status": status.HTTP_409_CONFLICT, "detail": str(exc)}
    except PermissionDenied as exc:
        return {"job": job_id, "status": status.HTTP_403_FORBIDDEN, "detail": str(exc)}
    except DjangoValidationError as exc:
        errors = exc.message_dict if hasattr(exc, "error_dict") else {"non_field_errors": exc.messages}
        return {"job": job_id, "status": status.HTTP_400_BAD_REQUEST, "errors": errors}
    return {"job": job.pk, "status": status.HTTP_200_OK, "state": job.state, "steps_done": job.steps_done}


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
