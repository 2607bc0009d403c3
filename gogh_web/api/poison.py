"""Poison strings: text that no column can hold and no answer can encode.

A NUL character: PostgreSQL's text and jsonb refuse it (a 500 at the write, or at a lookup).
A lone surrogate, half of a UTF-16 pair, which a JSON \\ud800 escape decodes to in Python:
SQLite stored it, then every read of the row failed to encode its JSON (a 500 on each later
list). Both are refused where requests come in: JSON bodies (gogh_web.api.parsers), query
strings and paths (PoisonQueryMiddleware below) and the admin's JSON fields
(PoisonFreeJSONFormField). Query strings, paths and form posts decode invalid UTF-8 to U+FFFD,
so NUL is the only poison they can carry, and Django's form CharField refuses it.
"""
import re

from django import forms
from django.http import HttpResponseBadRequest, JsonResponse
from rest_framework.settings import api_settings

#: A character no text of ours may hold: NUL, or half of a UTF-16 surrogate pair on its own.
POISON = re.compile("[\x00\ud800-\udfff]")
#: Problems named in one answer: enough to fix a request, few enough to keep the answer small.
MAX_REPORTED = 20
#: Characters of a key shown in an error's path (a key may be as long as the body).
MAX_KEY_SHOWN = 64
#: Addresses that answer JSON (the API, the console's JSON endpoints); the others, plain text.
_JSON_PATHS = ("/api/", "/dashboard/api/")


def poison_problem(text: str, subject: str = "Contains") -> str | None:
    """Why `text` cannot be stored, or None when it can."""
    found = POISON.search(text)
    if found is None:
        return None
    code = ord(found.group())
    if code == 0:
        return f"{subject} a NUL character (U+0000), which text may not contain."
    return f"{subject} a lone surrogate (U+{code:04X}), which is not a Unicode character."


def shown_key(key: str) -> str:
    """A key as an error's path names it: poison characters as \\uXXXX escapes (the answer's
    JSON could not hold them either), a very long key cut short."""
    shortened = key if len(key) <= MAX_KEY_SHOWN else key[:MAX_KEY_SHOWN] + "…"
    return POISON.sub(lambda found: f"\\u{ord(found.group()):04x}", shortened)


def poison_errors(data) -> dict[str, list[str]]:
    """Every poison string in parsed JSON (up to MAX_REPORTED), keyed by its path, e.g.
    `environment.KEY`, `samples[3].gpu` or `[1].reference` for a list body. Iterative: a
    body may nest as deep as the parser allows."""
    errors: dict[str, list[str]] = {}
    pending = [("", data)]
    while pending and len(errors) < MAX_REPORTED:
        path, value = pending.pop()
        if isinstance(value, str):
            if problem := poison_problem(value):
                errors[path or api_settings.NON_FIELD_ERRORS_KEY] = [problem]
        elif isinstance(value, dict):
            for key, item in reversed(value.items()):
                key_path = f"{path}.{shown_key(key)}" if path else shown_key(key)
                if problem := poison_problem(key, subject="The key contains"):
                    errors[key_path] = [problem]
                else:
                    pending.append((key_path, item))
        elif isinstance(value, list):
            pending.extend((f"{path}[{position}]", item) for position, item in reversed(list(enumerate(value))))
    return errors


def query_errors(request) -> dict[str, list[str]]:
    """A NUL in the path or in a query parameter's name or values, keyed by the parameter."""
    errors = {}
    if problem := poison_problem(request.path_info, subject="The path contains"):
        errors["path"] = [problem]
    for name, values in request.GET.lists():
        if problem := poison_problem(name, subject="The parameter's name contains"):
            errors[shown_key(name)] = [problem]
        elif problem := next(filter(None, map(poison_problem, values)), None):
            errors[shown_key(name)] = [problem]
    return errors


class PoisonQueryMiddleware:
    """400 for a NUL in a request's path or query string, before any view (or the database)
    sees it: a filter's form refuses it, but a name in the path (/api/gpu-types/v%00/) or a
    parameter read elsewhere reached PostgreSQL and answered 500."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        errors = query_errors(request)
        if not errors:
            return self.get_response(request)
        if request.path_info.startswith(_JSON_PATHS):
            return JsonResponse(errors, status=400)
        return HttpResponseBadRequest("A NUL character is not allowed in a path or query string.",
                                      content_type="text/plain")


class PoisonFreeJSONFormField(forms.JSONField):
    """A JSON form field (the admin's JSON columns) refusing poison strings, which its parser
    decodes from escapes as the API's does."""

    def to_python(self, value):
        data = super().to_python(value)
        if errors := poison_errors(data):
            raise forms.ValidationError([f"{path}: {messages[0]}" for path, messages in errors.items()])
        return data

    def bound_data(self, data, initial):
        """The form shown again keeps the text as typed: re-encoded, a lone surrogate could not
        be written into the page."""
        value = super().bound_data(data, initial)
        return forms.fields.InvalidJSONInput(data) if data is not None and poison_errors(value) else value
