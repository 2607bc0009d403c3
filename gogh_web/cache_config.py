"""Django's cache, from REDIS_URL: one cache for every process when the cluster runs Redis.

The cache holds the failed sign-in counts (gogh_web/dashboard/accounts.py) and the preview
throttle. In a process's own memory, the embedded default's single web process, each of several
web processes would count failures on its own, so the sign-in limit would multiply by the
number of processes. A distributed install already runs Redis for its channel layer
(REDIS_URL), so the cache goes there too; while Redis is away it fails soft
(gogh_web/cache_backend.py) rather than answering 500.
"""


def cache_config(redis_url: str) -> dict:
    """CACHES for a REDIS_URL (empty: the process's own memory)."""
    if not redis_url:
        return {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    return {"default": {"BACKEND": "gogh_web.cache_backend.FailSoftRedisCache", "LOCATION": redis_url}}
