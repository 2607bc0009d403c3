from django.apps import AppConfig


class GoghWebConfig(AppConfig):
    """The project package is also an app: it holds the landing page and the stack commands."""

    name = "gogh_web"
    verbose_name = "GOGH"
