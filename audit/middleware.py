from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from audit.context import client_address, request_user


class ClientAddressMiddleware:
    """Hands the connecting peer's address (REMOTE_ADDR), and a way to read the request's
    user, to the audit rows written while this request is served (audit.context)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        token = client_address.set(request.META.get("REMOTE_ADDR") or None)
        user_token = request_user.set(lambda: getattr(request, "user", None))
        try:
            return self.get_response(request)
        finally:
            request_user.reset(user_token)
            client_address.reset(token)
