"""Turn service-layer Django ValidationErrors into DRF 400 responses that name the field."""

from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import JsonResponse
from django.views.defaults import page_not_found
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


def not_found(request, exception):
    """handler404: a URL under /api/ that matches no route (e.g. a negative id) answers the
    API's JSON error shape; pages keep Django's HTML 404."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Not found."}, status=404)
    return page_not_found(request, exception)
