"""REST API of the telemetry app: /api/nodes/ and /api/gpus/."""
from rest_framework.routers import SimpleRouter

from .views import GpuViewSet, NodeViewSet

router = SimpleRouter()
router.register("nodes", NodeViewSet, basename="node")
router.register("gpus", GpuViewSet, basename="gpu")

urlpatterns = router.urls
