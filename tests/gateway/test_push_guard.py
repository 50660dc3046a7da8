"""The push URL guard on its own: which addresses and URLs it refuses, and what it lets through."""

from __future__ import annotations

import ipaddress

import pytest

from a2a.gateway.push_guard import PushGuard, Refused

pytestmark = pytest.mark.anyio

REFUSED_BY_DEFAULT = [
    "127.0.0.1",
    "10.0.0.1",
    "172.16.5.4",
    "192.168.1.1",
    "169.254.169.254",
    "100.64.0.1",
    "0.0.0.0",
    "224.0.0.1",
    "::1",
    "::",
    "fe80::1",
    "fc00::1",
    "ff02::1",
    "::ffff:127.0.0.1",
    "::ffff:169.254.169.254",
]


@pytest.mark.parametrize("address", REFUSED_BY_DEFAULT)
def test_non_public_addresses_are_refused(address: str) -> None:
    assert not PushGuard().allowed(ipaddress.ip_address(address))


@pytest.mark.parametrize("address", ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111"])
def test_public_addresses_pass(address: str) -> None:
    assert PushGuard().allowed(ipaddress.ip_address(address))


def test_the_operator_may_allow_private_addresses_or_networks() -> None:
    private = PushGuard(allow_private=True)
    assert private.allowed(ipaddress.ip_address("169.254.169.254"))
    assert private.allowed(ipaddress.ip_address("127.0.0.1"))
    assert not private.allowed(ipaddress.ip_address("224.0.0.1"))  # never multicast
    assert not private.allowed(ipaddress.ip_address("0.0.0.0"))
    listed = PushGuard(allow_cidrs=["127.0.0.0/8"])
    assert listed.allowed(ipaddress.ip_address("127.0.0.2"))
    assert listed.allowed(ipaddress.ip_address("::ffff:127.0.0.2"))
    assert not listed.allowed(ipaddress.ip_address("169.254.169.254"))


@pytest.mark.parametrize(
    "url",
    [
        "ftp://example.com/",
        "file:///etc/passwd",
        "gopher://example.com/",
        "http://user:pw@example.com/",
        "http:///path",
        "http://example.com:99999/",
        "http://localhost/",
        "http://127.1/",
        "http://[::1]:8080/",
        "http://no-such-host.invalid/",
    ],
)
async def test_urls_refused(url: str) -> None:
    with pytest.raises(Refused):
        await PushGuard().check(url)


async def test_the_checked_address_is_the_one_posted_to() -> None:
    target = await PushGuard(allow_cidrs=["127.0.0.0/8", "::1/128"]).check("http://localhost:8080/hook")
    assert target.host == "localhost"
    assert target.address in (ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1"))
