"""REST API of the telemetry app: /api/nodes/, /api/gpus/ and the agents' /api/telemetry/samples/
(their job endpoints are the scheduler's: scheduler.dispatch.api)."""
from django.urls import path
from rest_framework.routers import SimpleRouter

from .telemetry_views import SampleUploadView
from .views import GpuViewSet, NodeViewSet

router = SimpleRouter()
router.register("nodes", NodeViewSet, basename="node")
router.register("gpus", GpuViewSet, basename="gpu")

urlpatterns = [
    *router.urls,
    path("telemetry/samples/", SampleUploadView.as_view(), name="telemetry-samples"),
]
