"""Attaching a remote A2A agent: read its card, and serve it on the bus as an ordinary agent.

::

    host = await attach(runtime, "https://agent.example", headers={"X-API-Key": key})
    await runtime.call(by_capability("summarize"), "summarize", {"text": "..."})

What the card gives the bus agent:

- **name**: ``name``, else the card's name with every character outside letters, digits,
  ``_`` and ``-`` replaced by ``-``;
- **actions**: each skill id (at most :data:`MAX_SKILLS` skills, ids of at most 128
  characters), plus ``send``, which forwards ``{"text": ...}`` as a plain message;
- **capabilities**: the skill ids in the registry's charset (letters, digits,
  ``_ - . : /``; any other run of characters becomes ``_``), each at ``proficiency``, with
  the skill's name and description; ``capabilities`` replaces them;
- **description** and **metadata**: the card's description; ``defaultAction: "send"`` and
  ``external``: the card URL, the endpoint chosen, its binding and protocol version, the
  card's name and version, and whether its signature verified (``signature``);
- **refusal**: with ``card_keys``, a card that does not verify (no signature, or none that
  verifies with those keys) is still served, so that the registry shows it, but its
  instance reports itself ``offline`` and every call is PERMISSION_DENIED (the operator's
  trust decision, not a passing failure: UNAVAILABLE would invite retries); a warning
  says so at start-up;
- **health**: the card's URL is fetched every ``health_interval`` seconds; while the
  remote's server does not answer, the instance reports itself ``offline`` (routing by
  capability passes it by), and ``available`` again once it does;
- **trust**: a :class:`discovery.trust.TrustTracker` from ``base_trust`` and the card's
  signature state, fed by every forwarded call; the instance publishes its score with each
  heartbeat, and routing by capability weighs by it.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict, Unpack

from bus.subjects import validate_name
from discovery.profile import AgentCapability
from discovery.trust import DEFAULT_BASE, TrustTracker
from transports.a2a_http import AgentCard, AgentSkill

from ..core.agent import Agent
from ..core.hosting import AgentHost
from ..core.peer import peer_agent
from ..core.runtime import Runtime
from .client import fetch_card
from .interfaces import choose_endpoint
from .mapping import DEFAULT_ACTION
from .proxy import HEALTH_INTERVAL, RemotePeer
from .signature import card_signature, load_card_key

__all__ = [
    "MAX_SKILLS",
    "TEXT_SCHEMA",
    "RemoteAgent",
    "RemoteOptions",
    "attach",
    "capability_id",
    "remote_agent",
]

log = logging.getLogger("a2a.external")

MAX_SKILLS = 64
"""Skills of one card that become actions and capabilities (the registry bounds an entry's size)."""
TEXT_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "required": ["text"],
    "properties": {"text": {"type": "string"}},
    "additionalProperties": False,
}
"""Parameters of the ``send`` action."""
_MAX_ID = 128
_MAX_CAP_TEXT = 300
_NOT_CAPABILITY = re.compile(r"[^A-Za-z0-9_.:/-]+")
_NOT_NAME = re.compile(r"[^A-Za-z0-9_-]+")


@dataclass(frozen=True, slots=True)
class RemoteAgent:
    """A remote A2A agent ready to serve: the bus agent, the peer it forwards to, its card."""

    agent: Agent
    peer: RemotePeer
    card: AgentCard
    card_url: str


def capability_id(skill_id: str) -> str:
    """A skill id in the registry's capability charset (module docstring); ``skill`` when nothing is left."""
    return _NOT_CAPABILITY.sub("_", skill_id).strip("_")[:_MAX_ID] or "skill"


def _agent_name(card_name: str) -> str:
    return _NOT_NAME.sub("-", card_name).strip("-")[:_MAX_ID] or "remote-agent"


def _skills(card: AgentCard) -> list[AgentSkill]:
    """The skills that become actions: ids of 1-128 characters, at most MAX_SKILLS, ``send`` excluded."""
    usable = {s.id: s for s in card.skills if 0 < len(s.id) <= _MAX_ID and s.id != DEFAULT_ACTION}
    if len(usable) > MAX_SKILLS:
        log.warning(
            "%s lists %d skills; only the first %d become actions", card.name, len(usable), MAX_SKILLS
        )
    return list(usable.values())[:MAX_SKILLS]


def _capabilities(skills: Sequence[AgentSkill], proficiency: float) -> list[AgentCapability]:
    found: dict[str, AgentCapability] = {}
    for skill in skills:
        cap = capability_id(skill.id)
        found.setdefault(
            cap,
            AgentCapability(
                id=cap,
                name=skill.name[:64],
                description=skill.description[:_MAX_CAP_TEXT],
                proficiency=proficiency,
            ),
        )
    return list(found.values())


class RemoteOptions(TypedDict, total=False):
    """How :func:`remote_agent` and :func:`attach` read a remote agent's card and serve it."""

    name: str | None
    """The bus agent's name (default: from the card's name)."""
    headers: Mapping[str, str] | None
    """Added to every HTTP request, the card fetch included (API key, bearer token)."""
    base_trust: float
    """The remote's base trust score (:mod:`discovery.trust`)."""
    capabilities: Sequence[AgentCapability | str] | None
    """Replace the capabilities the card's skills give."""
    proficiency: float
    """The proficiency of each capability given by id (1.0)."""
    card_keys: Sequence[Any] | str | Path
    """Public keys (or a PEM file) trusted to sign the card; given, a card that does not
    verify with one of them is refused (module docstring)."""
    streaming: bool | None
    """Overrides the card's ``capabilities.streaming``."""
    max_concurrency: int
    """Calls forwarded at once per instance (32)."""
    timeout: float
    """Seconds the card fetch may take (10)."""
    any_origin: bool
    """Let the card name an endpoint on another host than its own (the ``headers`` go there too)."""
    health_interval: float
    """Seconds between fetches of the card that tell whether the remote still answers
    (``attach``: the runtime's heartbeat interval; :func:`remote_agent`: 1); 0 turns them off."""
    follow_redirects: bool
    """Let the card fetch follow redirects (with ``headers``, to another origin only with
    ``any_origin``); they are refused otherwise."""


async def remote_agent(url: str, **options: Unpack[RemoteOptions]) -> RemoteAgent:
    """Read the card at ``url`` (a base URL or the card's URL) and build the agent that forwards to it.

    ``options`` as :class:`RemoteOptions` says.

    Raises:
        ValueError: a bad URL, name, key file or trust, or a card with no usable interface.
        A2AError: the card cannot be fetched (NO_RESPONDERS, PERMISSION_DENIED...) or is malformed.
    """
    name, headers = options.get("name"), options.get("headers")
    card_keys, proficiency = options.get("card_keys", ()), options.get("proficiency", 1.0)
    any_origin, capabilities = options.get("any_origin", False), options.get("capabilities")
    keys = [load_card_key(card_keys)] if isinstance(card_keys, str | Path) else list(card_keys)
    agent_name = validate_name("agent name", name) if name is not None else None
    tracker = TrustTracker(base=options.get("base_trust", DEFAULT_BASE))  # checked before anything is fetched
    card, card_url = await fetch_card(
        url,
        headers=headers,
        timeout=options.get("timeout", 10.0),
        follow_redirects=options.get("follow_redirects", False),
        any_origin=any_origin,
    )
    endpoint = choose_endpoint(card, card_url, any_origin=any_origin)
    signature = tracker.signature = card_signature(card, keys)
    if card.signatures and not keys:
        log.info("the card of %s is signed but no key was given to check it: counted as unsigned", card.name)
    refusal = None
    if keys and signature != "verified":
        why = "no signature" if signature == "unsigned" else "no signature that verifies"
        refusal = f"the card at {card_url} has {why} with the trusted card keys: calls are refused"
        log.warning("%s; the agent is served offline, every call PERMISSION_DENIED", refusal)
    peer = RemotePeer(
        card,
        endpoint,
        headers=headers,
        tracker=tracker,
        streaming=options.get("streaming"),
        refusal=refusal,
        health_url=card_url,
        health_interval=options.get("health_interval", HEALTH_INTERVAL),
    )
    skills = _skills(card)
    caps: Sequence[AgentCapability | str]
    if capabilities is None:
        caps = _capabilities(skills, proficiency)
    else:
        caps = [
            c if isinstance(c, AgentCapability) else AgentCapability(id=c, proficiency=proficiency)
            for c in capabilities
        ]
    actions: dict[str, Mapping[str, Any] | None] = {skill.id: None for skill in skills}
    actions[DEFAULT_ACTION] = TEXT_SCHEMA
    external = {
        "protocol": "a2a",
        "cardUrl": card_url,
        "url": endpoint.url,
        "binding": endpoint.binding,
        "protocolVersion": endpoint.version,
        "cardName": card.name[:_MAX_ID],
        "cardVersion": card.version[:64],
        "signature": signature,
    }
    agent = peer_agent(
        agent_name or _agent_name(card.name),
        peer,
        actions=actions,
        capabilities=caps,
        description=card.description[:4096],
        max_concurrency=options.get("max_concurrency", 32),
        metadata={"defaultAction": DEFAULT_ACTION, "external": external},
        trust=tracker,
    )
    return RemoteAgent(agent, peer, card, card_url)


async def attach(runtime: Runtime, url: str, **options: Unpack[RemoteOptions]) -> AgentHost:
    """Serve the remote A2A agent at ``url`` on ``runtime`` (``options`` as :func:`remote_agent`).

    The instance registers with the remote's skills as capabilities and forwards each call
    (``proxy``) until the runtime closes. Use :func:`remote_agent` and serve its ``agent``
    to keep hold of the peer (its trust score).
    """
    options.setdefault("health_interval", runtime.settings.heartbeat_interval)
    remote = await remote_agent(url, **options)
    (host,) = await runtime.serve(remote.agent)
    return host
