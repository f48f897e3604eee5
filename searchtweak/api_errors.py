"""Turn service-layer Django ValidationErrors into DRF 400 responses that name the field."""

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import exceptions
from rest_framework.views import exception_handler as drf_exception_handler


def exception_handler(exc, context):
    if isinstance(exc, DjangoValidationError):
        if hasattr(exc, "error_dict"):
            detail = {field: messages for field, messages in exc.message_dict.items()}
        else:
            detail = {"non_field_errors": exc.messages}
        exc = exceptions.ValidationError(detail=detail)
    elif isinstance(exc, OverflowError):
        # An id beyond 64 bits: SQLite cannot even compare it (PostgreSQL finds no row), so
        # it names nothing that exists.
        exc = exceptions.NotFound()
    return drf_exception_handler(exc, context)

