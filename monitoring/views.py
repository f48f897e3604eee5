import hmac
import ipaddress

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST

from monitoring.collectors import exposition


def _peer_in(request: HttpRequest, networks) -> bool:
    """Whether the connecting peer (REMOTE_ADDR: behind a proxy, the proxy) is in one of
    `networks`."""
    try:
        address = ipaddress.ip_address(request.META.get("REMOTE_ADDR", ""))
    except ValueError:
        return False
    if getattr(address, "ipv4_mapped", None) is not None:
        address = address.ipv4_mapped  # ::ffff:10.0.0.5 from a dual-stack socket
    return any(address in network for network in networks)


def _scrape_allowed(request: HttpRequest) -> bool:
    token = settings.METRICS_TOKEN
    if token:
        given = request.headers.get("Authorization", "")
        if hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
            return True
    return _peer_in(request, settings.METRICS_ALLOW)


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """The operators' metrics, to a caller with METRICS_TOKEN or in a network of METRICS_ALLOW.

    With neither setting the page does not exist (404). A refused caller gets 401 with a
    Bearer challenge when a token is configured, else 404: an allow-list alone does not
    tell a stranger there is something here."""
    if not settings.METRICS_TOKEN and not settings.METRICS_ALLOW:
        raise Http404
    if not _scrape_allowed(request):
        if not settings.METRICS_TOKEN:
            raise Http404
        response = HttpResponse("A bearer token is needed.\n", status=401,
                                content_type="text/plain")
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    return HttpResponse(exposition(), content_type=CONTENT_TYPE_LATEST)
