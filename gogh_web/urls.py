"""Top-level routes: landing page, admin, sign-in, the dashboard, the REST API and its schema/docs."""
from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from .api.index import ApiIndexView
from .api.tokens import TokenRotateView
from .dashboard.accounts import LimitedAdminAuthenticationForm
from .metrics import MetricsView
from .views import landing

api_patterns = [
    path("", ApiIndexView.as_view(), name="api-index"),
    path("", include("catalog.api.urls")),
    path("", include("telemetry.api.urls")),
    path("", include("scheduler.api.urls")),
    path("", include("gogh_web.events.api.urls")),
    path("auth/token/rotate/", TokenRotateView.as_view(), name="token-rotate"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="docs"),
]

urlpatterns = [
    path("", landing, name="landing"),
    path("admin/", admin.site.urls),
    path("accounts/", include("gogh_web.dashboard.account_urls")),
    path("dashboard/", include("gogh_web.dashboard.urls")),
    path("api/", include(api_patterns)),
    path("metrics", MetricsView.as_view(), name="metrics"),
]

admin.site.site_header = "GOGH control plane"
admin.site.login_form = LimitedAdminAuthenticationForm  # failed sign-ins limited as on the console
admin.site.site_title = "GOGH admin"
