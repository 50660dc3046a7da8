"""Where a remote agent's card is, and which of its interfaces this runtime talks to.

A card lists ``supportedInterfaces`` (a URL, a protocol binding, a protocol version). The
client speaks four of them and prefers, in this order:

1. ``JSONRPC`` 1.x (exactly ``1.0`` first, then other 1.x, then an interface with no version,
   which the official SDK also speaks as 1.0);
2. ``HTTP+JSON`` 1.x (same order);
3. ``JSONRPC`` 0.3 (any 0.x from 0.3 on; a 0.3 card's interfaces are ``0.3.0`` by default);
4. ``HTTP+JSON`` 0.3.

Within one rank the card's own order decides. gRPC, 2.x and versions before 0.3 are never
chosen; a card offering nothing else has no usable interface.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal
from urllib.parse import urljoin, urlsplit, urlunsplit

from transports.a2a_http import (
    AGENT_CARD_PATH,
    BINDING_HTTP_JSON,
    BINDING_JSONRPC,
    PROTOCOL_VERSION_0_3,
    PROTOCOL_VERSION_1_0,
    AgentCard,
    AgentInterface,
)
from transports.a2a_http.versions import parse_version

__all__ = ["Endpoint", "NoUsableInterface", "card_location", "choose_endpoint", "origin", "rank"]

Version = Literal["1.0", "0.3"]


class NoUsableInterface(ValueError):
    """The card offers no interface this client speaks."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    """The interface chosen: absolute URL, binding, the version spoken, tenant (may be empty)."""

    url: str
    binding: str
    version: Version
    tenant: str = ""
    declared_version: str = ""
    """The ``protocolVersion`` the card gave (``""``, ``"1.0"``, ``"0.3.0"``...)."""

    @property
    def legacy(self) -> bool:
        """Whether this endpoint speaks the 0.3 dialect."""
        return self.version == PROTOCOL_VERSION_0_3


def card_location(url: str) -> str:
    """The URL to fetch a card from: ``url`` itself when it names a JSON document or a
    ``/.well-known/`` path, else ``url`` with ``/.well-known/agent-card.json`` appended.

    Raises:
        ValueError: not an absolute http(s) URL.
    """
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"not an http(s) URL: {url!r}")
    path = parts.path
    if path.endswith(".json") or "/.well-known/" in path:
        return parts.geturl()
    return urlunsplit((parts.scheme, parts.netloc, path.rstrip("/") + AGENT_CARD_PATH, "", ""))


def _tier(version: str) -> tuple[Version, int] | None:
    """The version spoken on an interface and its rank among that version's interfaces."""
    if not version:
        return "1.0", 2
    parsed = parse_version(version)
    if parsed is None:
        return None
    if parsed[0] == 1:
        return "1.0", 0 if parsed == (1, 0) else 1
    if parsed[0] == 0 and parsed[1] >= 3:
        return "0.3", 0
    return None


_BINDINGS = {BINDING_JSONRPC: 0, BINDING_HTTP_JSON: 1}


def rank(interface: AgentInterface) -> tuple[int, int, int] | None:
    """Sort key of an interface (lower is preferred), None when this client cannot speak it."""
    binding = _BINDINGS.get(interface.protocol_binding.upper())
    tier = _tier(interface.protocol_version.strip())
    if binding is None or tier is None:
        return None
    version, within = tier
    return (0 if version == PROTOCOL_VERSION_1_0 else 1), binding, within


def origin(url: str) -> tuple[str, str, int | None]:
    """Scheme, lower-case host and port of ``url``: whom a request to it goes to."""
    parts = urlsplit(url)
    return parts.scheme, (parts.hostname or "").lower(), parts.port


def choose_endpoint(card: AgentCard, card_url: str, *, any_origin: bool = False) -> Endpoint:
    """The preferred interface of ``card`` (module docstring); relative URLs resolve against ``card_url``.

    Only interfaces on the card's own origin (scheme, host, port) count unless
    ``any_origin``: the operator's credentials go to the endpoint, and an unsigned card
    must not be able to send them to another host.

    Raises:
        NoUsableInterface: none of the card's interfaces is one this client speaks.
    """
    home = origin(card_url)
    usable = [
        (key, i, iface)
        for i, iface in enumerate(card.supported_interfaces)
        if (key := rank(iface)) is not None
        and urlsplit(urljoin(card_url, iface.url)).scheme in ("http", "https")
        and (any_origin or origin(urljoin(card_url, iface.url)) == home)
    ]
    if not usable:
        offered = ", ".join(
            f"{i.protocol_binding} {i.protocol_version or '?'}" for i in card.supported_interfaces
        )
        raise NoUsableInterface(
            f"the card of {card.name!r} offers no JSON-RPC or HTTP+JSON interface of A2A 1.x or 0.3 "
            f"on its own origin (it offers: {offered or 'nothing'}; any_origin=True allows other hosts)"
        )
    key, _, chosen = min(usable, key=lambda item: (item[0], item[1]))
    tier = _tier(chosen.protocol_version.strip())
    assert tier is not None
    binding = BINDING_JSONRPC if key[1] == 0 else BINDING_HTTP_JSON
    return Endpoint(
        url=urljoin(card_url, chosen.url),
        binding=binding,
        version=tier[0],
        tenant=chosen.tenant,
        declared_version=chosen.protocol_version,
    )
