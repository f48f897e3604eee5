"""The one way SearchTweak talks to other servers (search endpoints, LLM judges).

Three rules hold for every request sent through `new_client` and `send`:

- The network policy (OUTBOUND_DENY_NETWORKS, OUTBOUND_ALLOW_NETWORKS) is checked on the
  address a connection really reaches: the transport resolves the host itself, checks
  every address, and connects to the checked one, so a hostname that resolves to a denied
  network, or a DNS answer that changes between check and connect, cannot slip through.
  TLS still verifies the certificate against the hostname, and Host stays the hostname.
- Redirects are followed here, hop by hop, never by httpx: a hop to the same origin keeps
  the request's headers; a hop to another origin is refused unless the caller allows it,
  and then carries none of the caller's headers (secrets and custom ones stay home).
- An optional deadline bounds the whole exchange (connect, TLS, every hop, every read):
  each socket operation waits at most until it.
"""

import contextvars
import functools
import ipaddress
import socket
import ssl
import time
import typing
from collections.abc import Iterable
from contextlib import contextmanager

import httpcore
import httpx
from django.conf import settings

from searchtweak.outbound_sending import connect_timeout_seconds

# Sent on every request, and the only headers a cross-origin redirect hop carries.
USER_AGENT = "SearchTweak/1 (+relevance evaluation)"
BASE_HEADERS = {"User-Agent": USER_AGENT, "Accept": "application/json"}
_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_BODY_HEADERS = frozenset({"content-type", "content-length", "transfer-encoding"})

_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "outbound_deadline", default=None)

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class OutboundRefused(httpcore.ConnectError):
    """The network policy refused the address a host resolved to (never retried)."""


class RedirectRefused(httpx.HTTPError):
    """A redirect the rules do not follow: to another origin, or one too many."""

    def __init__(self, message: str, *, response: httpx.Response) -> None:
        super().__init__(message)
        self.response = response


def refusal(error: BaseException) -> OutboundRefused | None:
    """The policy refusal behind an httpx error, if that is what it is."""
    while error is not None:
        if isinstance(error, OutboundRefused):
            return error
        error = error.__cause__ or error.__context__
    return None


_THIS_HOST_V4 = ipaddress.IPv4Network("0.0.0.0/8")
# IPv6 forms that carry an IPv4 address in their last 32 bits, besides the mapped one:
# behind the NAT64 prefix, IPv4-translated (RFC 2765) and IPv4-compatible (RFC 4291,
# deprecated; `::` and `::1` in it are IPv6's own unspecified and loopback addresses).
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_IPV4_TRANSLATED = ipaddress.IPv6Network("::ffff:0:0:0/96")
_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")
_IPV6_OWN = (ipaddress.IPv6Address("::"), ipaddress.IPv6Address("::1"))


def reached_addresses(address: IPAddress) -> list[IPAddress]:
    """The addresses a connection to `address` really reaches, as the policy must judge
    them: an IPv4 address written as IPv6 (mapped) is that IPv4 address; one embedded in
    another IPv6 form (NAT64, IPv4-translated, IPv4-compatible) is judged as itself and as
    that IPv4 address; the unspecified addresses (0.0.0.0/8, ::) connect to this host's
    loopback, so they are judged as themselves and as 127.0.0.1 or ::1."""
    reached: list[IPAddress] = []
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        elif address in _NAT64 or address in _IPV4_TRANSLATED or (
                address in _IPV4_COMPATIBLE and address not in _IPV6_OWN):
            reached = [address]
            address = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if isinstance(address, ipaddress.IPv4Address) and address in _THIS_HOST_V4:
        return [*reached, address, ipaddress.IPv4Address("127.0.0.1")]
    if address == ipaddress.IPv6Address("::"):
        return [address, ipaddress.IPv6Address("::1")]
    return [*reached, address]


def address_refusal(address: IPAddress) -> str:
    """Why the policy refuses `address`, or "" when it may be reached."""
    reached = reached_addresses(address)
    for target in reached:
        for network in _networks(settings.OUTBOUND_DENY_NETWORKS):
            if target.version == network.version and target in network:
                via = "" if target == reached[0] else f" reaches {target}, which"
                return (f"{reached[0]}{via} is in a denied network ({network}, "
                        "OUTBOUND_DENY_NETWORKS)")
    allowed = _networks(settings.OUTBOUND_ALLOW_NETWORKS)
    for target in reached:
        if allowed and not any(target.version == network.version and target in network
                               for network in allowed):
            via = "" if target == reached[0] else f" reaches {target}, which"
            return f"{reached[0]}{via} is outside the allowed networks (OUTBOUND_ALLOW_NETWORKS)"
    return ""


def _networks(values: Iterable[typing.Any]) -> list[IPNetwork]:
    return [value if isinstance(value, ipaddress.IPv4Network | ipaddress.IPv6Network)
            else ipaddress.ip_network(str(value), strict=False) for value in values]


def _remaining(timeout: float | None) -> float | None:
    deadline = _deadline.get()
    if deadline is None:
        return timeout
    left = max(deadline - time.monotonic(), 0.001)
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    """A socket stream whose every wait also ends at the deadline of the current send."""

    def __init__(self, stream: httpcore.NetworkStream) -> None:
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, _remaining(timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, _remaining(timeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(self, ssl_context, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        return _DeadlineStream(self._stream.start_tls(ssl_context, server_hostname,
                                                      _remaining(timeout)))

    def get_extra_info(self, info: str) -> typing.Any:
        return self._stream.get_extra_info(info)


class _GuardedBackend(httpcore.NetworkBackend):
    """Resolves, checks every address against the policy, connects to a checked one."""

    def __init__(self) -> None:
        self._backend = httpcore.SyncBackend()

    def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                    local_address: str | None = None,
                    socket_options: Iterable[typing.Any] | None = None,
                    ) -> httpcore.NetworkStream:
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as error:
            raise httpcore.ConnectError(f"cannot resolve {host}: {error}") from error
        addresses = list(dict.fromkeys(ipaddress.ip_address(info[4][0].split("%")[0])
                                       for info in infos))
        # One denied address refuses the host: which one a connection would reach is the
        # resolver's choice, so an allowed twin must not make a denied address reachable.
        for address in addresses:
            reason = address_refusal(address)
            if reason:
                shown = host if host == str(address) else f"{host} ({address})"
                raise OutboundRefused(f"refused to connect to {shown}: {reason}")
        last_error: Exception | None = None
        for address in addresses:
            try:
                stream = self._backend.connect_tcp(
                    str(address), port, timeout=_remaining(timeout),
                    local_address=local_address, socket_options=socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as error:
                last_error = error
                continue
            return _DeadlineStream(stream)
        raise last_error or httpcore.ConnectError(f"no address for {host}")

    def connect_unix_socket(self, *args, **kwargs) -> httpcore.NetworkStream:
        raise OutboundRefused("unix sockets are not reachable from outbound requests")

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """One verifying context a process, shared by its clients (an SSLContext may be): loading
    the CA bundle costs about 0.1 s of CPU, and every fetch task makes a client, twice over
    (httpx's transport builds one before ours replaces its pool)."""
    return httpx.create_ssl_context(trust_env=False)


class GuardedTransport(httpx.HTTPTransport):
    """httpx's transport with the policy-checking network backend; never a proxy from the
    environment, which would make the checked address the proxy's."""

    def __init__(self, *, limits: httpx.Limits) -> None:
        super().__init__(verify=_ssl_context(), limits=limits, trust_env=False)
        self._pool = httpcore.ConnectionPool(
            ssl_context=_ssl_context(),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=_GuardedBackend(),
        )


class _NoCookies(httpx.Cookies):
    """A jar that keeps nothing a response sets."""

    def extract_cookies(self, response: httpx.Response) -> None:
        pass


_NO_COOKIES = _NoCookies()


class _StatelessClient(httpx.Client):
    """An httpx client that does not read the cookies of each answer into its jar. Nothing
    reads that jar: our requests are built outside the client (httpx adds a jar's cookies
    in `build_request` only) and `send` follows redirects itself. Reading them cost 4 % of
    a fetch worker's CPU (bench/fetch.py, py-spy)."""

    @property
    def cookies(self) -> httpx.Cookies:
        # One empty jar for all: a new one per request built a CookieJar, its policy
        # and its lock each time, which is the cost this class saves.
        return _NO_COOKIES


def new_client(*, timeout_seconds: float, connections: int,
               transport: httpx.BaseTransport | None = None) -> httpx.Client:
    """A client for `send`. `transport` replaces the network (seed_demo's in-process
    answers): the policy guards sockets, and such a transport opens none."""
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    return _StatelessClient(
        timeout=httpx.Timeout(timeout_seconds, connect=connect_timeout_seconds(timeout_seconds)),
        transport=transport or GuardedTransport(limits=limits), limits=limits,
        follow_redirects=False, trust_env=False,
    )


@contextmanager
def deadline(seconds: float | None) -> typing.Iterator[float | None]:
    """Bound every socket wait inside the block to `seconds` from now (None: no bound).
    Yields the monotonic deadline."""
    if seconds is None:
        yield None
        return
    at = time.monotonic() + seconds
    token = _deadline.set(at)
    try:
        yield at
    finally:
        _deadline.reset(token)


def url_problem(url: str) -> str:
    """Why `url` cannot be sent through `send`, or "" when it can: read by the parser every
    request is built with (httpx.URL), so what a form accepts a send can parse. urllib takes
    hosts httpx refuses (`0177.0.0.1`, an octal IPv4 address), which then failed only when
    sent."""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError) as error:
        return f"The HTTP client cannot read this URL: {error}."
    if parsed.scheme not in ("http", "https") or not parsed.host:
        return "Enter an http:// or https:// URL."
    return ""


def origin(url: httpx.URL) -> tuple[str, str, int | None]:
    default_port = {"http": 80, "https": 443}.get(url.scheme)
    return url.scheme, url.host, url.port or default_port


def send(client: httpx.Client, request: httpx.Request, *,
         allow_cross_origin_redirects: bool = False) -> httpx.Response:
    """Send `request` and follow its redirects by the rules above; return the final
    response, streaming (the caller reads and closes it). Raises RedirectRefused, and
    httpx errors whose cause `refusal()` finds when the policy refused an address."""
    home = origin(request.url)
    hops = 0
    while True:
        response = client.send(request, stream=True)
        location = response.headers.get("Location")
        if response.status_code not in _REDIRECT_STATUSES or not location:
            return response
        response.close()
        try:
            target = request.url.join(location)
        except httpx.InvalidURL as error:
            raise RedirectRefused(f"the endpoint redirected to an invalid URL: {error}",
                                  response=response) from error
        if target.scheme not in ("http", "https"):
            raise RedirectRefused(f"the endpoint redirected to {target.scheme}: URLs, "
                                  "which are not followed", response=response)
        hops += 1
        if hops > settings.OUTBOUND_MAX_REDIRECTS:
            raise RedirectRefused(f"more than {settings.OUTBOUND_MAX_REDIRECTS} redirects "
                                  "(OUTBOUND_MAX_REDIRECTS)", response=response)
        same_origin = origin(target) == home
        if not same_origin and not allow_cross_origin_redirects:
            raise RedirectRefused(
                f"the endpoint redirected to another origin ({target.scheme}://"
                f"{target.netloc.decode()}); not followed, so its headers stay with it: "
                "allow cross-origin redirects on the endpoint to follow them",
                response=response)
        request = _redirected(request, response.status_code, target, same_origin)


def _redirected(request: httpx.Request, status: int, target: httpx.URL,
                same_origin: bool) -> httpx.Request:
    method = request.method
    # What browsers and httpx do: 303 always, and 301/302 after a POST, become a GET.
    if (status == 303 and method != "HEAD") or (status in (301, 302) and method == "POST"):
        method = "GET"
    keep_body = method == request.method
    headers = dict(request.headers) if same_origin else dict(BASE_HEADERS)
    if not same_origin and keep_body and "Content-Type" in request.headers:
        headers["Content-Type"] = request.headers["Content-Type"]
    # httpx sets Host and Content-Length from the new URL and body.
    dropped = {"host", "content-length", "transfer-encoding"} if keep_body else \
        {"host", *_BODY_HEADERS}
    headers = {name: value for name, value in headers.items() if name.lower() not in dropped}
    return httpx.Request(method, target, headers=headers,
                         content=request.content if keep_body else None,
                         extensions=request.extensions)
