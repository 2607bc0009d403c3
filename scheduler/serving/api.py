"""Service endpoints (docs/api.md, Services): create, list, read and stop inference services.
Declarations only: the rules live in serializers.py and services.py, the reads in selectors.py."""
from datetime import timedelta

from django.core.exceptions import ValidationError
from django.db.models import Prefetch
from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from gogh_web.api.errors import Conflict

from ..models import Allocation, Job, SolverConfig
from . import selectors, services
from .serializers import ServiceCreateSerializer, ServiceDetailSerializer, ServiceSerializer


class ServiceViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Services of the caller's tenant (all for staff). Another tenant's service answers 404."""

    serializer_class = ServiceSerializer
    filter_backends = []

    def get_queryset(self):
        open_rows = Allocation.objects.filter(end__isnull=True).select_related("gpu__node", "gpu__gpu_type") \
            .prefetch_related(Prefetch("partners", queryset=Job.objects.only("pk")))
        replicas = Job.objects.order_by("submitted_at", "pk").prefetch_related(Prefetch("allocations", open_rows))
        return selectors.services_visible_to(self.request.user).prefetch_related(Prefetch("replicas", replicas))

    def get_serializer_context(self):
        return {**super().get_serializer_context(), "margin": SolverConfig.load().service_latency_margin}

    @extend_schema(responses={200: ServiceDetailSerializer})
    def retrieve(self, request, pk=None):
        service = self.get_object()
        context = {**self.get_serializer_context(),
                   "traffic": selectors.traffic_since(service, timezone.now() - timedelta(hours=1))}
        return Response(ServiceDetailSerializer(service, context=context).data)

    @extend_schema(request=ServiceCreateSerializer, responses={201: ServiceSerializer})
    def create(self, request):
        body = ServiceCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        service = services.service_create(owner=request.user, data=body.validated_data)
        return Response(self.get_serializer(self.get_queryset().get(pk=service.pk)).data,
                        status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={200: ServiceSerializer})
    @action(detail=True, methods=["post"])
    def stop(self, request, pk=None):
        """Stop the service: every replica not yet ended is cancelled (409 when already stopped)."""
        service = self.get_object()
        try:
            services.service_stop(service=service, by=request.user)
        except ValidationError as exc:
            raise Conflict(" ".join(exc.messages)) from exc
        return Response(self.get_serializer(self.get_queryset().get(pk=service.pk)).data)
