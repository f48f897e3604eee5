"""Turn service-layer Django ValidationErrors into DRF 400 responses that name the field;
log the API's 401 and 403 as one line each, like the pages' 403."""

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import exceptions
from rest_framework.views import exception_handler as drf_exception_handler

from searchtweak.errors import log_refusal


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
    response = drf_exception_handler(exc, context)
    if response is not None and response.status_code in (401, 403):
        request = context["request"]
        # DRF's request holds the authenticated caller (token or session); after a failed
        # authentication its user is None rather than raising again.
        # The reason logged is the one the caller reads.
        log_refusal(request._request, response, reason=str(response.data.get("detail", "")),
                    user=getattr(request, "user", None))
    return response

