"""GOGH control plane: Django project package (settings, URLs, ASGI app, Celery app)."""
from .celery import app as celery_app

__all__ = ("celery_app",)
