"""One place that turns errors into API responses.

Services raise django.core.exceptions.ValidationError (they know nothing of DRF); here it
becomes the same 400 body shape DRF serializers produce: {"field": ["message", ...]}.
"""
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError as DjangoValidationError
from rest_framework import exceptions, status
from rest_framework.settings import api_settings
from rest_framework.views import exception_handler as drf_exception_handler

NON_FIELD = api_settings.NON_FIELD_ERRORS_KEY


class Conflict(exceptions.APIException):
    """409: the request is well formed but the resource's state forbids it (cancel a finished job)."""

    status_code = status.HTTP_409_CONFLICT
    default_code = "conflict"


def exception_handler(exc, context):
    if isinstance(exc, DjangoValidationError):
        if hasattr(exc, "error_dict"):
            detail = {
                (NON_FIELD if field == NON_FIELD_ERRORS else field): [m for e in errors for m in e.messages]
                for field, errors in exc.error_dict.items()
            }
        else:
            detail = {NON_FIELD: exc.messages}
        exc = exceptions.ValidationError(detail)
    return drf_exception_handler(exc, context)
