"""Django's Redis cache, failing soft while Redis is away.

The cache holds only counters that slow people down (failed sign-ins, the preview throttle):
nothing in it is a fact another part needs. Django's RedisCache raises on a lost connection,
which turned every sign-in into a 500 during a Redis outage. Here a read finds nothing, an
add succeeds (a lock is taken: the password check goes on) and a write is dropped, each outage
logged once: for the seconds Redis is away sign-ins are not slowed, but they work.
"""
import logging

from django.core.cache.backends.redis import RedisCache
from redis.exceptions import ConnectionError as RedisConnectionError, TimeoutError as RedisTimeoutError

log = logging.getLogger(__name__)
_UNREACHABLE = (RedisConnectionError, RedisTimeoutError, OSError)


class FailSoftRedisCache(RedisCache):
    _away = False

    def _soft(self, call, fallback, *args, **kwargs):
        try:
            result = call(*args, **kwargs)
        except _UNREACHABLE as exc:
            if not FailSoftRedisCache._away:
                log.warning("Redis cache unreachable (%s): counters are not kept until it is back", exc)
            FailSoftRedisCache._away = True
            return fallback
        FailSoftRedisCache._away = False
        return result

    def get(self, key, default=None, version=None):
        return self._soft(super().get, default, key, default, version)

    def get_many(self, keys, version=None):
        return self._soft(super().get_many, {}, keys, version)

    def add(self, key, value, timeout=None, version=None):
        return self._soft(super().add, True, key, value, timeout, version)

    def set(self, key, value, timeout=None, version=None):
        self._soft(super().set, None, key, value, timeout, version)

    def delete(self, key, version=None):
        return self._soft(super().delete, False, key, version)

    def delete_many(self, keys, version=None):
        self._soft(super().delete_many, None, keys, version)
