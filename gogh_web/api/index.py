"""GET /api/: what a script author (or a readiness probe) finds at the API's root: its
version, its resources with their URLs, and where the schema and its docs are.

Open to anyone, signed in or not: it lists only URLs that the schema at /api/schema/ lists too,
and a script learns from it where to go before it has a token (and why its calls answer 401).
"""
from django.conf import settings
from django.urls import reverse
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

#: Resource name -> URL name, in the order a newcomer meets them.
RESOURCES = {
    "jobs": "job-list",
    "services": "service-list",
    "workloads": "workload-list",
    "gpu-types": "gpu-type-list",
    "measurements": "measurement-list",
    "nodes": "node-list",
    "gpus": "gpu-list",
    "solve": "solve",
    "tenants": "tenant-list",
    "fair-share": "fair-share",
    "profiling-campaigns": "profiling-campaign-list",
    "live-snapshot": "live-snapshot",
    "token-rotate": "token-rotate",
    "telemetry-samples": "telemetry-samples",
    "job-progress": "telemetry-job-progress",
}
AUTHENTICATION = (
    "Every resource needs 'Authorization: Token <key>' (or a console session). `manage.py create_demo_admin` "
    "prints the demo administrator's token; `manage.py rotate_token USER` gives an account a new one."
)


class ApiIndexView(APIView):
    authentication_classes = []  # nothing here depends on who asks; a stale token still reads it
    permission_classes = [AllowAny]

    @extend_schema(
        tags=["index"],
        summary="API index: version, resources and their URLs, schema and docs",
        responses={200: inline_serializer("ApiIndex", {
            "name": serializers.CharField(),
            "version": serializers.CharField(),
            "resources": serializers.DictField(child=serializers.URLField()),
            "schema": serializers.URLField(),
            "docs": serializers.URLField(),
            "authentication": serializers.CharField(),
        })},
    )
    def get(self, request):
        url = request.build_absolute_uri
        return Response({
            "name": settings.SPECTACULAR_SETTINGS["TITLE"],
            "version": settings.SPECTACULAR_SETTINGS["VERSION"],
            "resources": {name: url(reverse(url_name)) for name, url_name in RESOURCES.items()},
            "schema": url(reverse("schema")),
            "docs": url(reverse("docs")),
            "authentication": AUTHENTICATION,
        })
