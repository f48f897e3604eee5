"""Rules every response follows, whatever view answers: what caches may keep, and query
strings no view can read."""

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.utils.cache import add_never_cache_headers

from searchtweak.json_input import NUL_PROBLEM


class NoStoreMiddleware:
    """`Cache-Control: no-store` (and its older spellings) on every answer to a signed-in
    caller, session or API token: those pages hold a team's data, and one shows a new API
    token once; a shared or back-button cache must not keep them. A view that set its
    own Cache-Control keeps it. Static files (WhiteNoise, before this) are not affected."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        # Read after the view: DRF sets the token's user on the request it wraps.
        user = getattr(request, "user", None)
        signed_in = user is not None and user.is_authenticated
        if (signed_in or "HTTP_AUTHORIZATION" in request.META) and not response.has_header(
                "Cache-Control"):
            add_never_cache_headers(response)
        return response


class QueryNulMiddleware:
    """A query parameter holding NUL (U+0000) is a 400 naming it: no view means it, and
    PostgreSQL refuses it in any statement a filter would build (a 500)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        query = request.META.get("QUERY_STRING", "")
        if "%00" in query or "\x00" in query:
            for name, values in request.GET.lists():
                if "\x00" in name or any("\x00" in value for value in values):
                    return _refusal(request, name.replace("\x00", "\\u0000"))
        return self.get_response(request)


def _refusal(request: HttpRequest, name: str) -> HttpResponse:
    if request.path.startswith("/api/"):
        return JsonResponse({name: [NUL_PROBLEM]}, status=400)
    return HttpResponseBadRequest(f"The query parameter {name!r} {NUL_PROBLEM}.",
                                  content_type="text/plain; charset=utf-8")
