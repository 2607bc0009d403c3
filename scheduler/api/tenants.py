"""Tenant endpoints (docs/api.md, Tenants): everyone signed in reads the tenants they may see
(staff all, a member its own: another tenant answers 404); only staff change shares, borrowing,
budgets, quotas and the fair-share half-life (403 for others)."""
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import SAFE_METHODS, BasePermission, IsAdminUser, IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from .. import services as scheduler_services
from ..models import SolverConfig
from ..tenancy import selectors, services
from .tenant_serializers import (
    EnergyBillSerializer,
    EnergyQuerySerializer,
    FairShareSettingsSerializer,
    QuotaOutSerializer,
    QuotaSetSerializer,
    TenantSerializer,
    TenantSettingsSerializer,
    bill,
)


class ReadOrStaffWrite(BasePermission):
    """Any signed-in user reads (what they may see); only staff write. Checked before the tenant
    is looked up, so a member changing any tenant, its own or another, gets the same 403."""

    def has_permission(self, request, view):
        return request.method in SAFE_METHODS or request.user.is_staff


class TenantViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    serializer_class = TenantSerializer
    permission_classes = [IsAuthenticated, ReadOrStaffWrite]
    lookup_field = "slug"
    filter_backends = []

    def get_queryset(self):
        return selectors.tenants_visible_to(self.request.user).order_by("name")

    def list(self, request):
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(selectors.tenant_overviews(page))

    def retrieve(self, request, slug=None):
        return Response(selectors.tenant_overviews([self.get_object()])[0])

    @extend_schema(request=TenantSettingsSerializer, responses={200: TenantSerializer})
    def partial_update(self, request, slug=None):
        tenant = self.get_object()
        body = TenantSettingsSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        tenant = services.tenant_update(tenant=tenant, values=body.validated_data)
        return Response(selectors.tenant_overviews([tenant])[0])

    @extend_schema(request=QuotaOutSerializer(many=True), responses={200: QuotaOutSerializer(many=True)})
    @action(detail=True, methods=["put"])
    def quotas(self, request, slug=None):
        """Replace the tenant's quota set with the list given, in one transaction."""
        tenant = self.get_object()
        body = QuotaSetSerializer(data={"quotas": request.data})
        body.is_valid(raise_exception=True)
        services.tenant_quotas_replace(tenant=tenant, quotas=body.validated_data["quotas"])
        return Response(selectors.tenant_overviews([tenant])[0]["quotas"])

    @extend_schema(
        responses={200: EnergyBillSerializer},
        parameters=[
            OpenApiParameter("from", OpenApiTypes.DATE, description="First UTC day (default: 1st of `to`'s month)."),
            OpenApiParameter("to", OpenApiTypes.DATE, description="Last UTC day, included (default: today)."),
            OpenApiParameter("by", OpenApiTypes.STR, enum=["day", "month"], description="Default: day."),
        ],
    )
    @action(detail=True, methods=["get"])
    def energy(self, request, slug=None):
        """The tenant's energy bill: kWh and GPU-hours per UTC day or calendar month."""
        tenant = self.get_object()
        query = EnergyQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        periods = selectors.energy_bill(tenant, **query.validated_data)
        return Response(EnergyBillSerializer(bill(tenant, query.validated_data, periods)).data)


@extend_schema(tags=["tenants"])
class FairShareSettingsView(APIView):
    """The fair-share half-life (a solver setting, SolverConfig.fair_share_half_life_h): read by
    anyone signed in, changed by staff through the audited solver-settings service."""

    def get_permissions(self):
        return [IsAuthenticated()] if self.request.method in SAFE_METHODS else [IsAdminUser()]

    @extend_schema(responses={200: FairShareSettingsSerializer})
    def get(self, request):
        return Response({"half_life_h": SolverConfig.load().fair_share_half_life_h})

    @extend_schema(request=FairShareSettingsSerializer, responses={200: FairShareSettingsSerializer})
    def patch(self, request):
        body = FairShareSettingsSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        config = scheduler_services.solver_config_update(
            by=request.user, values={"fair_share_half_life_h": body.validated_data["half_life_h"]}
        )
        return Response({"half_life_h": config.fair_share_half_life_h})
