from django.apps import AppConfig


class DashboardConfig(AppConfig):
    """Server-rendered pages with small static scripts; live updates come from gogh_web.events."""

    name = "gogh_web.dashboard"
    label = "dashboard"
    verbose_name = "Dashboard"
