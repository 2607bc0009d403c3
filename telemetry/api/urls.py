"""REST API of the telemetry app: /api/nodes/, /api/gpus/ and the agents' /api/telemetry/."""
from django.urls import path
from rest_framework.routers import SimpleRouter

from .telemetry_views import JobProgressBatchView, JobProgressView, SampleUploadView
from .views import GpuViewSet, NodeViewSet

router = SimpleRouter()
router.register("nodes", NodeViewSet, basename="node")
router.register("gpus", GpuViewSet, basename="gpu")

urlpatterns = [
    *router.urls,
    path("telemetry/samples/", SampleUploadView.as_view(), name="telemetry-samples"),
    path("telemetry/job-progress/", JobProgressView.as_view(), name="telemetry-job-progress"),
    path("telemetry/job-progress/batch/", JobProgressBatchView.as_view(), name="telemetry-job-progress-batch"),
]
