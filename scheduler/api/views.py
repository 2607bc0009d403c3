"""Job endpoints: declarations plus two actions; rules live in serializers and services."""
from django.db.models import Prefetch
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from gogh_web.api.errors import Conflict

from .. import services
from ..lifecycle import IllegalTransition
from ..models import Allocation, Job
from ..selectors import job_interruptions, jobs_visible_to
from .filters import JobFilter
from .serializers import (
    JobCancelSerializer,
    JobInterruptionSerializer,
    JobSerializer,
    JobSubmitSerializer,
    idempotency_key,
)

IDEMPOTENCY_HEADER = "Idempotency-Key"


class JobViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Jobs of the caller's tenant (all jobs for staff). Another tenant's job answers 404."""

    serializer_class = JobSerializer
    filterset_class = JobFilter
    ordering_fields = ["submitted_at", "priority", "state", "id"]

    def get_queryset(self):
        open_allocations = (
            Allocation.objects.filter(end__isnull=True)
            .select_related("gpu__node", "gpu__gpu_type")
            .prefetch_related(Prefetch("partners", queryset=Job.objects.only("pk")))  # one query for every row's
        )
        return jobs_visible_to(self.request.user).prefetch_related(
            Prefetch("allocations", queryset=open_allocations)
        )

    @extend_schema(
        request=JobSubmitSerializer,
        responses={201: JobSerializer},
        parameters=[
            OpenApiParameter(
                IDEMPOTENCY_HEADER,
                OpenApiTypes.STR,
                OpenApiParameter.HEADER,
                description="Retrying with the same key and body returns the same job instead of a second one.",
            )
        ],
    )
    def create(self, request):
        key = idempotency_key(request.headers.get(IDEMPOTENCY_HEADER))
        submit = JobSubmitSerializer(data=request.data)
        submit.is_valid(raise_exception=True)
        data = submit.validated_data
        result = services.job_submit(
            owner=request.user,
            **data,
            idempotency_key=key,
            fingerprint=services.request_fingerprint({**data, "workload": data["workload"].name}),
        )
        headers = {} if result.created else {"Idempotent-Replayed": "true"}
        job = self.get_queryset().get(pk=result.job.pk)
        return Response(JobSerializer(job).data, status=status.HTTP_201_CREATED, headers=headers)

    @extend_schema(request=JobCancelSerializer, responses={200: JobSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        job = self.get_object()
        body = JobCancelSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            services.job_cancel(job=job, by=request.user, reason=body.validated_data["reason"])
        except IllegalTransition as exc:
            raise Conflict(str(exc)) from exc
        return Response(JobSerializer(self.get_queryset().get(pk=job.pk)).data)

    @extend_schema(responses={200: JobInterruptionSerializer(many=True)}, filters=False)
    @action(detail=True, methods=["get"], filter_backends=[])
    def interruptions(self, request, pk=None):
        """The times the job was stopped before its end to run again (moved, preempted, its
        node went down, its GPU failed, it asked to be resumed), newest first, paginated."""
        job = self.get_object()
        page = self.paginate_queryset(job_interruptions(job))
        return self.get_paginated_response(JobInterruptionSerializer(page, many=True).data)
