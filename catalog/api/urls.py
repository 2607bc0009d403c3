from rest_framework.routers import SimpleRouter

from .views import GpuTypeViewSet, MeasurementViewSet, WorkloadViewSet

router = SimpleRouter()
router.register("gpu-types", GpuTypeViewSet, basename="gpu-type")
router.register("workloads", WorkloadViewSet, basename="workload")
router.register("measurements", MeasurementViewSet, basename="measurement")

urlpatterns = router.urls
