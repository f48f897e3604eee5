"""403 and 404 pages inside the site's layout, naming the reason; JSON under /api/.

Django renders handler403 for every PermissionDenied, DEBUG or not, but logs it with its
traceback; forbidden() logs one line instead (log_refusal, which the API's 401 and 403 use
too). It renders handler404 only when DEBUG is
off: with DEBUG on (the embedded default) it shows its technical page, so
NotFoundPageMiddleware renders ours for the Http404 our views raise ("No such team.").
A URL that matches no route still gets the technical page under DEBUG, which lists the
routes: that one is a developer's typo, not a page a user follows. A body over
DATA_UPLOAD_MAX_MEMORY_SIZE reaches handler400 (bad_request) from pages and the API alike
(DRF passes the error on) and answers 413 naming the limit; with DEBUG on Django shows its
technical page instead, as for any SuspiciousOperation. A lost database connection
(a restart, a terminated backend) reaches handler500 (server_error), which answers 503 with
a plain body saying to retry: the request either committed or changed nothing.
"""

import sys
from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import InterfaceError, OperationalError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils.log import log_response
from django.views.defaults import bad_request as django_bad_request
from django.views.defaults import server_error as django_server_error

FORBIDDEN_REASON = "You do not have permission to open this page."
NOT_FOUND_REASON = "There is nothing here, or it belongs to a team you are not in."
DATABASE_LOST = ("The database connection was lost while answering. Each change is one "
                 "transaction: it was either saved whole or not at all. Retry the request.")


def _is_api(request: HttpRequest) -> bool:
    return request.path.startswith("/api/")


def _reason(exception: Exception | None, default: str) -> str:
    # Only a plain message is shown: the URL resolver's Http404 carries a dict of the
    # patterns it tried, which is for developers.
    message = exception.args[0] if exception is not None and exception.args else None
    return message if isinstance(message, str) and message.strip() else default


def forbidden(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """handler403: the reason in the layout, and one log line without a traceback."""
    return _forbidden(request, _reason(exception, FORBIDDEN_REASON), about_roles=True)


def _forbidden(request: HttpRequest, reason: str, *, about_roles: bool) -> HttpResponse:
    if _is_api(request):
        response = JsonResponse({"detail": reason}, status=403)
    else:
        response = render(request, "403.html",
                          {"reason": reason, "about_roles": about_roles}, status=403)
    log_refusal(request, response, reason=reason, user=getattr(request, "user", None))
    return response


def log_refusal(request: HttpRequest, response: HttpResponse, *, reason: str,
                user: object | None) -> None:
    """Log a 401 or 403 as one line: status, method, path, user id and reason.

    A refusal is an expected answer, not a fault: no traceback. log_response marks the
    response as logged, so Django's own line (with the traceback for PermissionDenied,
    or without the user and the reason for the API's), written later, is skipped.
    `user` is passed in because the API authenticates on DRF's request, not Django's.
    """
    authenticated = user is not None and getattr(user, "is_authenticated", False)
    log_response(
        "%s (%s): %s %s user=%s reason=%s", response.reason_phrase, response.status_code,
        request.method, request.path, user.pk if authenticated else "-", reason,
        response=response, request=request,
    )


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """CSRF_FAILURE_VIEW: a form kept open past its session, or a page opened from
    another site, answers our 403 page saying what to do, not Django's debug page."""
    return _forbidden(request, "This form had expired or was sent from another site (CSRF "
                      f"check failed: {reason.rstrip('.')}). Reload the page and try again.",
                      about_roles=False)


def body_too_big_reason() -> str:
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    return (f"The request body is larger than {limit:,} bytes, the most this server reads "
            "(DATA_UPLOAD_MAX_MEMORY_SIZE). Send keywords as a file upload, or ask the "
            "administrator to raise the setting.")


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """handler400: a body over Django's limit answers 413 with the limit and what to do
    (Django's own page names nothing); any other 400 keeps Django's plain page."""
    if isinstance(exception, RequestDataTooBig):
        reason = body_too_big_reason()
        if _is_api(request):
            return JsonResponse({"detail": reason}, status=413)
        return render(request, "413.html", {"reason": reason}, status=413)
    return django_bad_request(request, exception)


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """handler404: a URL under /api/ (e.g. a negative id) answers the API's JSON error
    shape; pages answer our page in the layout."""
    if _is_api(request):
        return JsonResponse({"detail": "Not found."}, status=404)
    return render(request, "404.html", {"reason": _reason(exception, NOT_FOUND_REASON)},
                  status=404)


class NotFoundPageMiddleware:
    """Render our 404 page for an Http404 a page view raises, also with DEBUG on.

    The API's views are DRF's, which turn Http404 into JSON before any middleware sees it.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, Http404) and not _is_api(request):
            return not_found(request, exception)
        return None



def server_error(request: HttpRequest) -> HttpResponse:
    """handler500: a lost database connection is a 503 to retry (with Retry-After), in the
    API's JSON shape under /api/, plain text on pages (the layout would query the database
    again); any other error is Django's 500."""
    if isinstance(sys.exc_info()[1], OperationalError | InterfaceError):
        if _is_api(request):
            response = JsonResponse({"detail": DATABASE_LOST}, status=503)
        else:
            response = HttpResponse(DATABASE_LOST, status=503,
                                    content_type="text/plain; charset=utf-8")
        response["Retry-After"] = "1"
        return response
    return django_server_error(request)
