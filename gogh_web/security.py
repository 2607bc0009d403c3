"""Who is asking, and what the browser may run: the client's address behind trusted proxies,
and the Content-Security-Policy of every page.

Behind a reverse proxy every request comes from the proxy's address, so anything keyed on
REMOTE_ADDR (the sign-in throttle) would treat all users as one. X-Forwarded-For and
X-Forwarded-Proto are believed only from the proxies named in GOGH_TRUSTED_PROXIES: from any
other peer they are dropped before Django reads them, so a client cannot pick its own address
or claim HTTPS (SECURE_PROXY_SSL_HEADER) by sending the headers itself.
"""
import ipaddress

from django.conf import settings
from django.core.exceptions import DisallowedHost, ImproperlyConfigured

#: Headers only a trusted proxy may set (WSGI/ASGI META names).
PROXY_HEADERS = ("HTTP_X_FORWARDED_FOR", "HTTP_X_FORWARDED_PROTO")
#: Longest address kept from a forwarded header: enough for any IPv6 text, short enough for a cache key.
ADDRESS_CHARS = 64
#: Views whose pages come from a third party's template with inline script and style: the API's
#: Swagger UI (drf-spectacular). They get no policy rather than one that breaks them.
UNPOLICED_VIEWS = frozenset({"docs"})


def proxy_networks(value: str) -> tuple:
    """GOGH_TRUSTED_PROXIES ("10.0.0.5, 10.1.0.0/16, ::1") -> networks; a typo stops the start,
    since a proxy that is silently not trusted makes every user share its address."""
    networks = []
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        try:
            networks.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            raise ImproperlyConfigured(
                f"GOGH_TRUSTED_PROXIES: {item!r} is not an IP address or network (e.g. 10.0.0.5 or 10.0.0.0/24)"
            ) from None
    return tuple(networks)


def _is_trusted_proxy(address: str) -> bool:
    try:
        parsed = ipaddress.ip_address(address.strip())
    except ValueError:
        return False
    return any(parsed in network for network in settings.GOGH_TRUSTED_PROXIES)


def client_address(request) -> str:
    """REMOTE_ADDR, unless that is a trusted proxy: then the right-most address of
    X-Forwarded-For that is not a trusted proxy (each proxy appends the peer it saw, so the
    entries to its left are whatever the client wrote and prove nothing)."""
    peer = request.META.get("REMOTE_ADDR", "")
    if not _is_trusted_proxy(peer):
        return peer
    forwarded = [hop.strip() for hop in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if hop.strip()]
    for hop in reversed(forwarded):
        if not _is_trusted_proxy(hop):
            return hop[:ADDRESS_CHARS]
    return forwarded[0][:ADDRESS_CHARS] if forwarded else peer


def content_security_policy(request) -> str:
    """Scripts, style sheets and fonts from this site only: the pages have no inline script,
    style or event handler, Plotly's bundle runs without eval, and its run-time CSS goes into a
    sheet of ours (static/css/plotly-csp.css). Style *attributes* are allowed: Plotly sets them
    with setAttribute("style", ...) as it draws, and an attribute can neither run script nor,
    with images and fonts from this site only, fetch from elsewhere. The live socket on this
    host; no framing."""
    try:
        host = request.get_host()
        sockets = f" ws://{host} wss://{host}"
    except DisallowedHost:  # the response is Django's 400 for the bad Host; no socket for it
        sockets = ""
    return "; ".join([
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "style-src-attr 'unsafe-inline'",
        "img-src 'self' data: blob:",
        "font-src 'self' data:",
        f"connect-src 'self'{sockets}",
        "worker-src 'self' blob:",
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ])


class SecurityHeadersMiddleware:
    """First in MIDDLEWARE: proxy headers from untrusted peers go before SecurityMiddleware's
    HTTPS redirect reads them; every answer gets the Content-Security-Policy."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not _is_trusted_proxy(request.META.get("REMOTE_ADDR", "")):
            for header in PROXY_HEADERS:
                request.META.pop(header, None)
        response = self.get_response(request)
        match = getattr(request, "resolver_match", None)
        if match is None or match.url_name not in UNPOLICED_VIEWS:
            response.headers.setdefault("Content-Security-Policy", content_security_policy(request))
        return response
