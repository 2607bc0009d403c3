"""Catalog endpoints: declarations, plus the batch-aware create of measurements.

Validation lives in the serializers, writes in catalog.services.
"""
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.response import Response

from gogh_web.api.permissions import IsStaffOrReadOnly, ReadOrAgentWrite

from .. import selectors, services
from .filters import MeasurementFilter, WorkloadFilter
from .serializers import MAX_BATCH, GpuTypeSerializer, MeasurementSerializer, WorkloadSerializer


class GpuTypeViewSet(viewsets.ModelViewSet):
    """GPU types by name. Everyone signed in reads; staff change them."""

    serializer_class = GpuTypeSerializer
    permission_classes = [IsStaffOrReadOnly]
    lookup_field = "name"
    ordering_fields = ["name", "memory_gb", "tdp_w", "idle_w"]

    def get_queryset(self):
        return selectors.gpu_type_list()

    def perform_create(self, serializer):
        serializer.instance = services.gpu_type_create(**serializer.validated_data)

    def perform_update(self, serializer):
        serializer.instance = services.gpu_type_update(gpu_type=serializer.instance, data=serializer.validated_data)

    def perform_destroy(self, instance):
        services.gpu_type_delete(gpu_type=instance)


class WorkloadViewSet(viewsets.ModelViewSet):
    """Workloads. Everyone signed in reads (filter by name, family, kind); staff change them."""

    serializer_class = WorkloadSerializer
    permission_classes = [IsStaffOrReadOnly]
    filterset_class = WorkloadFilter
    ordering_fields = ["name", "family", "batch_size", "id"]

    def get_queryset(self):
        return selectors.workload_list()

    def perform_create(self, serializer):
        serializer.instance = services.workload_create(**serializer.validated_data)

    def perform_update(self, serializer):
        serializer.instance = services.workload_update(workload=serializer.instance, data=serializer.validated_data)

    def perform_destroy(self, instance):
        services.workload_delete(workload=instance)


class MeasurementViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Measurements. Everyone signed in reads; node agents and staff report new ones.

    Measurements are observations: they are added, never edited through the API.
    """

    serializer_class = MeasurementSerializer
    permission_classes = [ReadOrAgentWrite]
    filterset_class = MeasurementFilter
    ordering_fields = ["observed_at", "throughput", "num_gpus", "id"]

    def get_queryset(self):
        return selectors.measurement_list()

    @extend_schema(
        request=MeasurementSerializer,
        responses={201: MeasurementSerializer},
        description=(
            f"Report one measurement, or a JSON list of up to {MAX_BATCH} (all are stored or none; "
            'a 400 names each bad item by its index: {"3": {"throughput": ["..."]}}). Workload, GPU '
            "type and partner go by name. Only staff may write source=reference. An agent account writes "
            "source=telemetry only, of a workload with a job open on a GPU of that type on one of its approved "
            "nodes (and a partner sharing that GPU); 403 otherwise, and nothing is stored."
        ),
    )
    def create(self, request):
        many = isinstance(request.data, list)
        serializer = self.get_serializer(
            data=request.data, **({"many": True, "allow_empty": False, "max_length": MAX_BATCH} if many else {})
        )
        serializer.is_valid(raise_exception=True)
        items = serializer.validated_data if many else [serializer.validated_data]
        created = services.measurements_create(measurements=items, by=request.user)
        body = self.get_serializer(created if many else created[0], many=many).data
        return Response(body, status=status.HTTP_201_CREATED)
