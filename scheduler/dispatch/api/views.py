"""The agents' job endpoints: the assignments of their node (/api/nodes/{id}/assignments/) and
their reports of its jobs (/api/telemetry/job-progress/, single and batch); rules live in
scheduler.dispatch."""
from django.core.exceptions import PermissionDenied, ValidationError as DjangoValidationError
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.generics import GenericAPIView
from rest_framework.response import Response
from rest_framework.views import APIView

from gogh_web.api.errors import Conflict
from gogh_web.api.permissions import IsAgentOrStaff
from telemetry import selectors as inventory
from telemetry.api.telemetry_serializers import field_paths
from telemetry.services.access import check_may_report

from .. import progress
from ..assignments import node_assignments
from .serializers import (
    AssignmentSerializer,
    JobProgressBatchResultSerializer,
    JobProgressBatchSerializer,
    JobProgressSerializer,
)


class NodeAssignmentsView(GenericAPIView):
    """GET /api/nodes/{id}/assignments/, beside the inventory's node endpoints."""

    queryset = inventory.nodes()
    permission_classes = [IsAgentOrStaff]
    pagination_class = None
    filter_backends = []

    @extend_schema(responses={200: AssignmentSerializer(many=True)})
    def get(self, request, pk=None):
        """The jobs the node's agent must run (only that agent, or staff, may read them)."""
        node = self.get_object()
        check_may_report(node, request.user)
        assignments = node_assignments(node, for_its_agent=node.agent_id == request.user.pk)
        return Response(AssignmentSerializer(assignments, many=True).data)


class JobProgressView(APIView):
    """POST /api/telemetry/job-progress/: progress or the end of a job running on the agent's node."""

    permission_classes = [IsAgentOrStaff]

    @extend_schema(request=JobProgressSerializer, responses={200: None})
    def post(self, request):
        report = JobProgressSerializer(data=request.data)
        report.is_valid(raise_exception=True)
        data = dict(report.validated_data)
        try:
            job = progress.job_progress_report(agent_user=request.user, job_id=data.pop("job"), **data)
        except progress.NotAssigned as exc:
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
        job = progress.job_progress_report(agent_user=user, job_id=job_id, **data)
    except progress.NotAssigned as exc:
        return {"job": job_id, "status": status.HTTP_409_CONFLICT, "detail": str(exc)}
    except PermissionDenied as exc:
        return {"job": job_id, "status": status.HTTP_403_FORBIDDEN, "detail": str(exc)}
    except DjangoValidationError as exc:
        errors = exc.message_dict if hasattr(exc, "error_dict") else {"non_field_errors": exc.messages}
        return {"job": job_id, "status": status.HTTP_400_BAD_REQUEST, "errors": errors}
    return {"job": job.pk, "status": status.HTTP_200_OK, "state": job.state, "steps_done": job.steps_done}
