"""WSGI entry point, for deployments that put a WSGI server in front of the HTTP API."""
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gogh_web.settings")

application = get_wsgi_application()
