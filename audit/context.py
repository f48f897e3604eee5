"""What the request being served tells the audit rows its services write.

Set by audit.middleware.ClientAddressMiddleware around each request; unset in a worker or
a command. Context variables, so threads and requests never see each other's.

- `client_address`: the connecting peer's address.
- `request_user`: reads the request's user when called (not before: DRF authenticates a
  token inside the view, after the middleware ran, and sets the user then). For the
  services that take no user argument; one that does passes its actor explicitly."""

from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

client_address: ContextVar[str | None] = ContextVar("audit_client_address", default=None)
request_user: ContextVar[Callable[[], Any] | None] = ContextVar("audit_request_user",
                                                                default=None)
