from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from audit.context import client_address


class ClientAddressMiddleware:
    """Hands the connecting peer's address (REMOTE_ADDR) to the audit rows written while
    this request is served."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        token = client_address.set(request.META.get("REMOTE_ADDR") or None)
        try:
            return self.get_response(request)
        finally:
            client_address.reset(token)
