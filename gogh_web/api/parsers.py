"""JSON parsing with a hard size limit.

DRF reads the request stream itself and so bypasses Django's DATA_UPLOAD_MAX_MEMORY_SIZE;
this parser enforces the same limit, for bodies with and without a Content-Length, and turns
an oversized body into a 400 instead of reading it into memory.
"""
import json

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


class BoundedJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise ParseError(f"Request body exceeds the limit of {limit} bytes.")
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            return json.loads(raw.decode(encoding), parse_constant=_reject_constant)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ParseError(f"JSON parse error - {exc}") from exc
        except RecursionError:  # nesting deeper than Python's stack: a client's mistake, not a 500
            raise ParseError("JSON parse error - nested too deeply.") from None


def _reject_constant(name: str):
    """NaN and Infinity are not JSON; Python's parser would accept them silently."""
    raise ValueError(f"{name} is not valid JSON")
