"""Dashboard routes (namespace `dashboard`): the seven pages and the Trade-off page's JSON."""
from django.urls import path

from . import api, views

app_name = "dashboard"

urlpatterns = [
    path("", views.cluster, name="cluster"),
    path("jobs/", views.jobs, name="jobs"),
    path("predictions/", views.predictions, name="predictions"),
    path("solver/", views.solver, name="solver"),
    path("tradeoff/", views.tradeoff, name="tradeoff"),
    path("tenants/", views.tenants, name="tenants"),
    path("services/", views.services, name="services"),
    path("api/tradeoff/", api.TradeoffSweepView.as_view(), name="tradeoff-sweep"),
    path("api/tradeoff/<int:pk>/", api.TradeoffSweepDetailView.as_view(), name="tradeoff-sweep-detail"),
    path("api/tradeoff/preview/", api.TradeoffPreviewView.as_view(), name="tradeoff-preview"),
    path("api/tradeoff/apply/", api.TradeoffApplyView.as_view(), name="tradeoff-apply"),
]
