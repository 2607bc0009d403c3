"""One place that turns errors into API responses.

Services raise django.core.exceptions.ValidationError (they know nothing of DRF); here it
becomes the same 400 body shape DRF serializers produce: {"field": ["message", ...]}.
"""
from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import exceptions
from rest_framework.views import exception_handler as drf_exception_handler


def exception_handler(exc, context):
    if isinstance(exc, DjangoValidationError):
        if hasattr(exc, "error_dict"):
            detail = {field: [m for e in errors for m in e.messages] for field, errors in exc.error_dict.items()}
        else:
            detail = {"non_field_errors": exc.messages}
        exc = exceptions.ValidationError(detail)
    return drf_exception_handler(exc, context)
