"""/metrics in Prometheus text format, read from the database at scrape time: each app
contributes its own metric families (telemetry.metrics, scheduler.metrics), composed here in
one order so scrapes stay comparable. docs/telemetry.md lists them all."""
from django.utils import timezone
from drf_spectacular.utils import extend_schema
from prometheus_client import CollectorRegistry, generate_latest
from rest_framework import renderers
from rest_framework.permissions import BasePermission
from rest_framework.response import Response
from rest_framework.views import APIView

from scheduler import metrics as scheduler_metrics
from scheduler.profiling.metrics import profiling_families
from scheduler.serving.metrics import service_families
from telemetry import metrics as telemetry_metrics

METRICS_PERMISSION = "telemetry.view_gpusample"


class ControlPlaneCollector:
    """One scrape: the latest sample of every GPU heard from recently, queue, nodes, solver."""

    def __init__(self):
        self.now = timezone.now()

    def collect(self):
        yield from telemetry_metrics.gpu_families(self.now)
        yield from telemetry_metrics.board_families()
        yield from scheduler_metrics.job_families()
        yield from telemetry_metrics.node_families()
        yield from scheduler_metrics.solve_families()
        yield from scheduler_metrics.prediction_families()
        yield from scheduler_metrics.executor_families()
        yield from scheduler_metrics.tenant_families()
        yield from profiling_families()
        yield from service_families()


def render() -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ControlPlaneCollector())
    return generate_latest(registry)


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
        return Response(render(), content_type="text/plain; version=0.0.4; charset=utf-8")
