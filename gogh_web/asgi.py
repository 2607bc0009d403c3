"""ASGI entry point served by daphne: HTTP, and the live-update WebSocket (gogh_web.events).

WebSockets pass the origin check (the Origin header must name one of ALLOWED_HOSTS, so another
site's page cannot open a socket with a signed-in user's cookie) and the session middleware
(scope["user"]) before they reach a consumer.
"""
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gogh_web.settings")

django_asgi_app = get_asgi_application()

# Imported once Django is set up (E402): channels.auth and the consumers reach models.
from channels.auth import AuthMiddlewareStack  # noqa: E402 -- needs Django set up first
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402 -- needs Django set up first
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402 -- needs Django set up first

from gogh_web.events.routing import websocket_urlpatterns  # noqa: E402 -- needs Django set up first

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)
