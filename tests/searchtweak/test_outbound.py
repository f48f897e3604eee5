"""The network policy's decision on an address (searchtweak.outbound.address_refusal);
tests/evaluations/test_outbound.py proves it on real connections."""

import ipaddress

import pytest

from searchtweak.outbound import address_refusal


@pytest.mark.parametrize("address", [
    "169.254.169.254", "fe80::1", "fd00:ec2::254", "100.100.100.200",
    "::ffff:169.254.169.254",  # the IPv4 metadata address written as IPv6
])
def test_the_default_policy_denies_metadata_and_link_local(address):
    assert "OUTBOUND_DENY_NETWORKS" in address_refusal(ipaddress.ip_address(address))


@pytest.mark.parametrize("address", ["127.0.0.1", "10.1.2.3", "93.184.216.34", "::1"])
def test_the_default_policy_allows_everything_else(address):
    assert address_refusal(ipaddress.ip_address(address)) == ""


def test_a_denied_network_wins_over_an_allowed_one(settings):
    settings.OUTBOUND_ALLOW_NETWORKS = ["10.0.0.0/8"]
    settings.OUTBOUND_DENY_NETWORKS = ["10.9.0.0/16"]
    assert address_refusal(ipaddress.ip_address("10.1.0.1")) == ""
    assert address_refusal(ipaddress.ip_address("10.9.0.1")) == (
        "10.9.0.1 is in a denied network (10.9.0.0/16, OUTBOUND_DENY_NETWORKS)")
    assert address_refusal(ipaddress.ip_address("192.168.0.1")) == (
        "192.168.0.1 is outside the allowed networks (OUTBOUND_ALLOW_NETWORKS)")
