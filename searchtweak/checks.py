"""System checks `manage.py check --deploy` runs on a production configuration."""

import ipaddress
from typing import Any

from django.conf import settings
from django.core import checks


@checks.register(checks.Tags.security, deploy=True)
def outbound_deny_networks_check(app_configs: Any = None,
                                 **kwargs: Any) -> list[checks.CheckMessage]:
    """Name the networks of the production default that OUTBOUND_DENY_NETWORKS leaves open,
    so an operator who overrode it (or runs with DEBUG's loopback) sees what teams reach."""
    denied = [ipaddress.ip_network(str(network), strict=False)
              for network in settings.OUTBOUND_DENY_NETWORKS]
    default = [ipaddress.ip_network(network) for network in
               settings.OUTBOUND_PRODUCTION_DENY_NETWORKS]
    opened = [network for network in default
              if not any(network.version == deny.version and network.subnet_of(deny)
                         for deny in denied)]
    if not opened:
        return []
    return [checks.Warning(
        "OUTBOUND_DENY_NETWORKS leaves open " + ", ".join(map(str, opened)) + ": any team's "
        "endpoints and judges can reach servers there.",
        hint="Open only the networks your search engines and LLM servers are in. The "
             "production default is OUTBOUND_DENY_NETWORKS="
             + ",".join(settings.OUTBOUND_PRODUCTION_DENY_NETWORKS),
        id="searchtweak.W001",
    )]
