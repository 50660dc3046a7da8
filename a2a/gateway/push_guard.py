"""Which push-notification URLs the gateway may POST to: a guard against server-side request forgery.

A push URL comes from a client, and the gateway POSTs to it from inside the deployment,
so a URL naming a private address (``http://10.0.0.5/admin``, the cloud metadata service
at ``169.254.169.254``, ``127.0.0.1``) would let any client reach what only the gateway
can. The guard refuses:

- schemes other than ``http`` and ``https``, URLs with user info, URLs without a host;
- hosts that resolve to any address that is not globally routable: private, loopback,
  link-local, shared (CGNAT), reserved, unspecified or multicast (IPv4-mapped IPv6
  addresses are judged by their IPv4 address);

unless the operator allows them (``allow_private``: every unicast address; ``allow_cidrs``:
those networks). Hosts are resolved when a configuration is created and again before every
delivery, and the POST goes to the address that was checked (:class:`Target`), so a name
that resolves elsewhere later (DNS rebinding) cannot slip through.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

import anyio

__all__ = ["PushGuard", "Refused", "Target"]

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class Refused(ValueError):
    """The URL may not receive push notifications (the message says why, for the client)."""


@dataclass(frozen=True)
class Target:
    """Where one POST goes: the checked address, and the URL's own host for ``Host`` and TLS."""

    url: str
    """The configured URL."""
    host: str
    """Its host name (for the ``Host`` header and TLS server name)."""
    address: Address
    """The checked address the connection is made to."""


class PushGuard:
    """Checks push URLs and the addresses their hosts resolve to."""

    def __init__(self, *, allow_private: bool = False, allow_cidrs: Iterable[str] = ()) -> None:
        self.allow_private = allow_private
        self.allow_cidrs: tuple[Network, ...] = tuple(
            ipaddress.ip_network(cidr, strict=False) for cidr in allow_cidrs
        )

    def allowed(self, address: Address) -> bool:
        """Whether the gateway may connect to ``address``."""
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        if any(address in network for network in self.allow_cidrs):
            return True
        if address.is_multicast or address.is_unspecified:
            return False
        return self.allow_private or address.is_global

    @staticmethod
    def parse(url: str) -> tuple[str, str, int]:
        """(scheme, host, port) of an acceptable URL.

        Raises:
            Refused: not an absolute http(s) URL with a host, or with user info.
        """
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError:
            raise Refused("url: not a valid URL") from None
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https"):
            raise Refused("url: push notifications go to http or https URLs only")
        if not parts.hostname:
            raise Refused("url: the URL names no host")
        if parts.username is not None or parts.password is not None:
            raise Refused("url: user info in the URL is not accepted; use authentication")
        return scheme, parts.hostname, port or (443 if scheme == "https" else 80)

    async def check(self, url: str) -> Target:
        """The address to POST ``url`` to, once every address its host has is allowed.

        Raises:
            Refused: the URL, or any address its host resolves to, is refused (or the host
                does not resolve).
        """
        _, host, port = self.parse(url)
        try:
            addresses = [ipaddress.ip_address(host)]
        except ValueError:
            addresses = await _resolve(host, port)
        refused = [a for a in addresses if not self.allowed(a)]
        if refused:
            raise Refused(f"url: {host} is at {refused[0]}, an address push notifications may not go to")
        return Target(url=url, host=host, address=addresses[0])


async def _resolve(host: str, port: int) -> list[Address]:
    try:
        infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise Refused(f"url: the host {host} does not resolve") from None
    found = [ipaddress.ip_address(str(info[4][0]).partition("%")[0]) for info in infos]
    if not found:
        raise Refused(f"url: the host {host} does not resolve")
    return list(dict.fromkeys(found))
