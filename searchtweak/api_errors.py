"""Turn service-layer Django ValidationErrors into DRF 400 responses that name the field;
log the API's 401 and 403 as one line each, like the pages' 403."""

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import exceptions
from rest_framework.views import exception_handler as drf_exception_handler

from searchtweak.errors import log_refusal
from searchtweak.integers import ID_MAX


def exception_handler(exc, context):
    if isinstance(exc, DjangoValidationError):
        if hasattr(exc, "error_dict"):
            detail = {field: messages for field, messages in exc.message_dict.items()}
        else:
            detail = {"non_field_errors": exc.messages}
        exc = exceptions.ValidationError(detail=detail)
    elif isinstance(exc, OverflowError):
        if _url_names_huge_id(context):
            # An id in the address beyond 64 bits: SQLite cannot even compare it
            # (PostgreSQL finds no row), so it names nothing that exists.
            exc = exceptions.NotFound()
        else:
            # A number in the body or query that no bounded field read (searchtweak.integers
            # is the rule; this is the backstop): the caller's input, never a missing row.
            exc = exceptions.ValidationError(
                {"non_field_errors": ["A number in the request is out of range."]})
    response = drf_exception_handler(exc, context)
    if response is not None and response.status_code in (401, 403):
        request = context["request"]
        # DRF's request holds the authenticated caller (token or session); after a failed
        # authentication its user is None rather than raising again.
        # The reason logged is the one the caller reads.
        log_refusal(request._request, response, reason=str(response.data.get("detail", "")),
                    user=getattr(request, "user", None))
    return response



def _url_names_huge_id(context) -> bool:
    return any(isinstance(value, int) and not -ID_MAX <= value <= ID_MAX
               for value in (context.get("kwargs") or {}).values())
