from django.urls import include, path
from rest_framework.routers import SimpleRouter

from .solve import SolveView
from .views import JobViewSet

router = SimpleRouter()
router.register("jobs", JobViewSet, basename="job")

urlpatterns = [
    *router.urls,
    path("solve/", SolveView.as_view(), name="solve"),
    path("", include("scheduler.dispatch.api.urls")),
]
