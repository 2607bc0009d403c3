"""Profiling campaigns on the API: GET /api/profiling-campaigns/ (every signed-in user reads:
campaigns are facts about the cluster's GPU types) and POST /api/gpu-types/<name>/profile/
(staff: start a campaign now, trigger admin), POST /api/profiling-campaigns/<id>/cancel/ (staff:
stop an open one)."""
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import IsAdminUser
from rest_framework.response import Response
from rest_framework.views import APIView

from catalog.models import GpuType
from gogh_web.api.errors import Conflict
from gogh_web.api.strict import StrictFieldsMixin

from ..models import CampaignTrigger, ProfilingCampaign
from . import selectors, services


class ProfilingCampaignSerializer(serializers.ModelSerializer):
    gpu_type = serializers.SlugRelatedField(slug_field="name", read_only=True)
    requested_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    jobs = serializers.PrimaryKeyRelatedField(many=True, read_only=True, help_text="Its jobs' ids.")

    class Meta:
        model = ProfilingCampaign
        fields = [
            "id", "gpu_type", "state", "trigger", "suite_version", "driver_version", "cases", "cases_done", "failures",
            "requested_by", "message", "jobs", "created_at", "started_at", "finished_at",
        ]
        read_only_fields = fields


class ProfileRequestSerializer(StrictFieldsMixin, serializers.Serializer):
    """Empty: the campaign runs the suite's cases for the type's largest node."""


class ProfilingCampaignViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Profiling campaigns, newest first (filter by ?gpu_type=<name> and ?state=)."""

    serializer_class = ProfilingCampaignSerializer
    filterset_fields = {"state": ["exact"], "trigger": ["exact"], "gpu_type__name": ["exact"]}
    ordering_fields = ["created_at", "id"]

    def get_queryset(self):
        return selectors.campaign_list()

    @extend_schema(request=ProfileRequestSerializer, responses={200: ProfilingCampaignSerializer})
    @action(detail=True, methods=["post"], permission_classes=[IsAdminUser])
    def cancel(self, request, pk=None):
        """200 with the cancelled campaign and its unfinished jobs cancelled; 400 (`state`) for a
        campaign that has ended; 403 for non-staff. A refusal writes nothing."""
        campaign = self.get_object()
        ProfileRequestSerializer(data=request.data).is_valid(raise_exception=True)
        services.campaign_cancel(campaign=campaign, by=request.user)
        return Response(ProfilingCampaignSerializer(selectors.campaign_list().get(pk=campaign.pk)).data)


class GpuTypeProfileView(APIView):
    """POST /api/gpu-types/<name>/profile/: staff start a profiling campaign of the type now."""

    permission_classes = [IsAdminUser]

    @extend_schema(request=ProfileRequestSerializer, responses={201: ProfilingCampaignSerializer})
    def post(self, request, name: str):
        """201 with the campaign; 404 unknown type; 400 when no node has the type (or no case can
        run); 409 while the type has an open campaign. A refusal writes nothing."""
        gpu_type = get_object_or_404(GpuType, name=name)
        ProfileRequestSerializer(data=request.data).is_valid(raise_exception=True)
        try:
            campaign = services.campaign_start(gpu_type=gpu_type, trigger=CampaignTrigger.ADMIN,
                                               requested_by=request.user)
        except services.CampaignOpen as exc:
            raise Conflict(str(exc)) from exc
        campaign = selectors.campaign_list().get(pk=campaign.pk)
        return Response(ProfilingCampaignSerializer(campaign).data, status=status.HTTP_201_CREATED)
