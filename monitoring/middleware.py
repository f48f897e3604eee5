"""Counts and times every request by the name of the view that answered it."""

import time
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from searchtweak import instruments

# A request no pattern matched (a 404 from the resolver) or answered by a middleware
# before resolving: one label for all of them, whatever path they asked.
UNRESOLVED = "<unresolved>"


class RequestMetricsMiddleware:
    """First in MIDDLEWARE, so the time covers every other middleware. The label is the
    resolver's view name (`judgments:grade`), never the path: the number of label values
    stays the number of URL patterns."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        match = getattr(request, "resolver_match", None)
        view = (match.view_name or UNRESOLVED) if match is not None else UNRESOLVED
        instruments.REQUESTS.labels(view, instruments.status_class(response.status_code)).inc()
        instruments.REQUEST_SECONDS.labels(view).observe(time.perf_counter() - started)
        return response
