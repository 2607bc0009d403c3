from django.urls import include, path
from rest_framework.routers import SimpleRouter

from ..profiling.api import GpuTypeProfileView, ProfilingCampaignViewSet
from ..serving.api import ServiceViewSet
from .solve import SolveView
from .tenants import FairShareSettingsView, TenantViewSet
from .views import JobViewSet

router = SimpleRouter()
router.register("jobs", JobViewSet, basename="job")
router.register("tenants", TenantViewSet, basename="tenant")
router.register("profiling-campaigns", ProfilingCampaignViewSet, basename="profiling-campaign")
router.register("services", ServiceViewSet, basename="service")

urlpatterns = [
    *router.urls,
    path("solve/", SolveView.as_view(), name="solve"),
    path("fair-share/", FairShareSettingsView.as_view(), name="fair-share"),
    path("gpu-types/<str:name>/profile/", GpuTypeProfileView.as_view(), name="gpu-type-profile"),
    path("", include("scheduler.dispatch.api.urls")),
]
