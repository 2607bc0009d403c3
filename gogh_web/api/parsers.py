"""JSON parsing with a hard size limit, refusing text no column can hold.

DRF reads the request stream itself and so bypasses Django's DATA_UPLOAD_MAX_MEMORY_SIZE;
this parser enforces the same limit, for bodies with and without a Content-Length, and turns
an oversized body into a 400 instead of reading it into memory.

It is also the one place every JSON body passes, so it refuses poison strings (gogh_web.api.poison)
there, keys and values at any depth, with a 400 naming each one's path: DRF's CharField refuses
them, but dictionary keys, JSON columns and unknown-field names never meet a CharField.
"""
import codecs
import json
import re

from django.conf import settings
from rest_framework.exceptions import ParseError, ValidationError
from rest_framework.parsers import JSONParser

from .poison import POISON, poison_errors

#: An escape of NUL or of a surrogate.
_POISON_ESCAPE = re.compile(r"\\u(?:0000|[dD][89a-fA-F])")


class BoundedJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise ParseError(f"Request body exceeds the limit of {limit} bytes.")
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            text = raw.decode(encoding)
            data = json.loads(text, parse_constant=_reject_constant)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ParseError(f"JSON parse error - {exc}") from exc
        except RecursionError:  # nesting deeper than Python's stack: a client's mistake, not a 500
            raise ParseError("JSON parse error - nested too deeply.") from None
        if _may_hold_poison(text, encoding) and (errors := poison_errors(data)):
            raise ValidationError(errors)
        return data


def _may_hold_poison(text: str, encoding: str) -> bool:
    """Whether parsed JSON may hold a poison string, so that nearly all bodies are not walked:
    only through an escape, or a charset other than UTF-8 (UTF-7 decodes to lone surrogates). A
    raw NUL is a JSON syntax error, and strict UTF-8 decoding gives no surrogates."""
    if "\\" in text and _POISON_ESCAPE.search(text):  # one character: found as fast as memchr
        return True
    return codecs.lookup(encoding).name != "utf-8" and POISON.search(text) is not None


def _reject_constant(name: str):
    """NaN and Infinity are not JSON; Python's parser would accept them silently."""
    raise ValueError(f"{name} is not valid JSON")
