"""The client address of the request being served, for the audit rows its services write.

Set by audit.middleware.ClientAddressMiddleware around each request; None in a worker or a
command. A context variable, so threads and requests never see each other's."""

from contextvars import ContextVar

client_address: ContextVar[str | None] = ContextVar("audit_client_address", default=None)
