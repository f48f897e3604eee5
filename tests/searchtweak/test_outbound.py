"""The network policy's decision on an address (searchtweak.outbound.address_refusal) and
its defaults; tests/evaluations/test_outbound.py proves it on real connections."""

import ipaddress
import os
import subprocess
import sys
from pathlib import Path

import pytest

from searchtweak.checks import outbound_deny_networks_check
from searchtweak.outbound import address_refusal

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def production_default(settings):
    settings.DEBUG = False
    settings.OUTBOUND_DENY_NETWORKS = list(settings.OUTBOUND_PRODUCTION_DENY_NETWORKS)
    settings.OUTBOUND_ALLOW_NETWORKS = []


@pytest.mark.parametrize("address", [
    "127.0.0.1", "127.8.9.10", "::1", "0.0.0.0", "::",  # this host
    "10.1.2.3", "172.16.0.1", "172.31.255.254", "192.168.1.1", "fd12::1", "fc00::1",
    "169.254.169.254", "fe80::1", "fd00:ec2::254", "100.100.100.200", "100.64.0.1",
    "224.0.0.1", "ff02::1", "255.255.255.255",
    "::ffff:169.254.169.254", "::ffff:127.0.0.1",  # IPv4 written as IPv6
    "64:ff9b::a00:1",  # 10.0.0.1 behind NAT64
])
def test_the_production_default_denies_every_network_inside_a_deployment(
        production_default, address):
    assert "OUTBOUND_DENY_NETWORKS" in address_refusal(ipaddress.ip_address(address))


@pytest.mark.parametrize("address", ["93.184.216.34", "8.8.8.8", "2606:4700::1111",
                                     "172.32.0.1", "100.128.0.1"])
def test_the_production_default_allows_public_addresses(production_default, address):
    assert address_refusal(ipaddress.ip_address(address)) == ""


def test_with_debug_on_the_default_opens_loopback_only(settings):
    # The settings this suite runs with: DEBUG on, no OUTBOUND_* variables. The unspecified
    # addresses reach loopback (`make run HOST=0.0.0.0` points the demo endpoint there).
    for address in ("127.0.0.1", "::1", "0.0.0.0", "::"):
        assert address_refusal(ipaddress.ip_address(address)) == ""
    for address in ("10.1.2.3", "192.168.0.1", "169.254.169.254", "100.100.100.200",
                    "fd00:ec2::254"):
        assert "OUTBOUND_DENY_NETWORKS" in address_refusal(ipaddress.ip_address(address))


@pytest.mark.parametrize(("address", "reason"), [
    ("0.0.0.0", "0.0.0.0 reaches 127.0.0.1, which is in a denied network (127.0.0.0/8, "
                "OUTBOUND_DENY_NETWORKS)"),
    ("0.1.2.3", "0.1.2.3 reaches 127.0.0.1, which is in a denied network (127.0.0.0/8, "
                "OUTBOUND_DENY_NETWORKS)"),
    ("::", ":: reaches ::1, which is in a denied network (::1/128, OUTBOUND_DENY_NETWORKS)"),
    ("::ffff:0.0.0.0", "0.0.0.0 reaches 127.0.0.1, which is in a denied network "
                       "(127.0.0.0/8, OUTBOUND_DENY_NETWORKS)"),
])
def test_the_unspecified_addresses_count_as_loopback(settings, address, reason):
    settings.OUTBOUND_DENY_NETWORKS = ["127.0.0.0/8", "::1/128"]
    assert address_refusal(ipaddress.ip_address(address)) == reason


def test_the_unspecified_address_is_outside_an_allow_list_of_public_networks(settings):
    settings.OUTBOUND_DENY_NETWORKS = []
    settings.OUTBOUND_ALLOW_NETWORKS = ["0.0.0.0/8"]
    assert address_refusal(ipaddress.ip_address("0.0.0.0")) == (
        "0.0.0.0 reaches 127.0.0.1, which is outside the allowed networks "
        "(OUTBOUND_ALLOW_NETWORKS)")


def test_a_denied_network_wins_over_an_allowed_one(settings):
    settings.OUTBOUND_ALLOW_NETWORKS = ["10.0.0.0/8"]
    settings.OUTBOUND_DENY_NETWORKS = ["10.9.0.0/16"]
    assert address_refusal(ipaddress.ip_address("10.1.0.1")) == ""
    assert address_refusal(ipaddress.ip_address("10.9.0.1")) == (
        "10.9.0.1 is in a denied network (10.9.0.0/16, OUTBOUND_DENY_NETWORKS)")
    assert address_refusal(ipaddress.ip_address("192.168.0.1")) == (
        "192.168.0.1 is outside the allowed networks (OUTBOUND_ALLOW_NETWORKS)")


def test_the_deploy_check_names_what_an_override_opens(settings):
    settings.OUTBOUND_DENY_NETWORKS = [
        network for network in settings.OUTBOUND_PRODUCTION_DENY_NETWORKS
        if network not in ("10.0.0.0/8", "fc00::/7")] + ["fd00:ec2::/32"]
    [warning] = outbound_deny_networks_check()
    assert warning.id == "searchtweak.W001"
    assert warning.msg.startswith("OUTBOUND_DENY_NETWORKS leaves open 10.0.0.0/8, fc00::/7: ")
    assert warning.hint.endswith(
        "OUTBOUND_DENY_NETWORKS=" + ",".join(settings.OUTBOUND_PRODUCTION_DENY_NETWORKS))


def test_the_deploy_check_is_quiet_on_the_default_or_a_stricter_list(settings):
    settings.OUTBOUND_DENY_NETWORKS = list(settings.OUTBOUND_PRODUCTION_DENY_NETWORKS)
    assert outbound_deny_networks_check() == []
    settings.OUTBOUND_DENY_NETWORKS = ["0.0.0.0/0", "::/0"]
    assert outbound_deny_networks_check() == []


def _python(code: str, **overrides: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if k not in {"DATABASE_URL", "CELERY_BROKER_URL", "DEBUG", "SECRET_KEY",
                        "OUTBOUND_DENY_NETWORKS", "OUTBOUND_ALLOW_NETWORKS"}}
    env.update(DJANGO_SETTINGS_MODULE="searchtweak.settings", **overrides)
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)


def test_debug_off_starts_with_the_production_default_and_check_deploy_stays_quiet():
    result = _python(
        "import django; django.setup(); from django.conf import settings as s; "
        "from django.core.management import call_command; "
        "print(','.join(map(str, s.OUTBOUND_DENY_NETWORKS)) == "
        "','.join(s.OUTBOUND_PRODUCTION_DENY_NETWORKS)); "
        "call_command('check', deploy=True)",
        DEBUG="false", SECRET_KEY="x" * 60)
    assert result.stdout.splitlines()[0] == "True", result.stderr
    assert "searchtweak.W001" not in result.stdout + result.stderr


def test_check_deploy_prints_the_default_when_the_deny_list_is_overridden():
    result = _python(
        "import django; django.setup(); from django.core.management import call_command; "
        "call_command('check', deploy=True)",
        DEBUG="false", SECRET_KEY="x" * 60, OUTBOUND_DENY_NETWORKS="169.254.0.0/16")
    output = result.stdout + result.stderr
    assert "(searchtweak.W001) OUTBOUND_DENY_NETWORKS leaves open 127.0.0.0/8, ::1/128," in output
    assert "The production default is OUTBOUND_DENY_NETWORKS=127.0.0.0/8,::1/128,0.0.0.0/8" in \
        output
