"""Agent cards built from the registry: the gateway's own and one per agent on the bus.

- The **gateway's card** (``/.well-known/agent-card.json``) has one skill per capability
  any live agent offers: a message naming that skill goes to the best live agent with it.
  Its description says where a message naming no skill goes (``planning.origin_agent``).
- An **agent's card** (``/agents/<name>/.well-known/agent-card.json``) has one skill per
  action, tagged with the agent's capabilities; the actions' input schemas (and how to
  name an action in a data part) are in the ``urn:a2a-runtime:actions:v1`` extension.

Both list the JSON-RPC and HTTP+JSON interfaces (protocol 1.0) and JSON-RPC for 0.3,
and carry the 0.3 top-level keys too (``url``, ``preferredTransport``, ``protocolVersion``,
``security``), so 0.3 clients read them as well. Cards follow the registry: an agent
that stops disappears from them at its next change event; the ETag changes with them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

from discovery.profile import AgentProfile
from transports.a2a_http import agent_card_json, codec
from transports.a2a_http.card import (
    AgentCapabilities,
    AgentCard,
    AgentExtension,
    AgentInterface,
    AgentSkill,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)

from .auth import Authenticator
from .planning import origin_agent

__all__ = ["ACTIONS_EXTENSION", "agent_card", "card_body", "gateway_card", "profiles_by_name"]

ACTIONS_EXTENSION = "urn:a2a-runtime:actions:v1"
_VERSION = "1.0"


def profiles_by_name(profiles: Iterable[AgentProfile]) -> dict[str, list[AgentProfile]]:
    by_name: dict[str, list[AgentProfile]] = {}
    for profile in profiles:
        by_name.setdefault(profile.name, []).append(profile)
    return by_name


def _interfaces(url: str) -> list[AgentInterface]:
    return [
        AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version=_VERSION),
        AgentInterface(url=url, protocol_binding="HTTP+JSON", protocol_version=_VERSION),
        AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="0.3"),
    ]


def _security(auth: Authenticator) -> tuple[dict[str, SecurityScheme], list[SecurityRequirement]]:
    schemes = {name: codec.convert(value, SecurityScheme) for name, value in auth.security_schemes().items()}
    requirements = [SecurityRequirement(schemes={name: StringList()}) for name in schemes]
    return schemes, requirements


def _card(
    name: str, description: str, url: str, skills: list[AgentSkill], auth: Authenticator, **extra: Any
) -> AgentCard:
    schemes, requirements = _security(auth)
    return AgentCard(
        name=name,
        description=description or name,
        supported_interfaces=_interfaces(url),
        version=extra.pop("version", "1.0.0"),
        capabilities=AgentCapabilities(streaming=True, push_notifications=True, **extra),
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["text/plain", "application/json"],
        skills=skills,
        security_schemes=schemes,
        security_requirements=requirements,
    )


def _routing(url: str, live: list[str], default_agent: str | None) -> str:
    """How the gateway's endpoint routes a message, said in its card."""
    by_skill = "a message naming a skill in metadata.skillId goes to the best live agent with it"
    target = origin_agent(live, default_agent)
    if target is None:
        return (
            f"Name a skill: {by_skill}; a message naming none is refused. Or send to one agent's own "
            f"endpoint, {url}/agents/<name> (its card: {url}/agents/<name>/.well-known/agent-card.json)."
        )
    only = "" if default_agent is not None else ", the only live agent"
    return (
        f"A message naming no skill goes to the agent {target}{only} "
        f"(its card: {url}/agents/{target}/.well-known/agent-card.json); {by_skill}."
    )


def gateway_card(
    name: str,
    description: str,
    url: str,
    profiles: Iterable[AgentProfile],
    auth: Authenticator,
    default_agent: str | None = None,
) -> AgentCard:
    """One skill per capability of any live agent (routed to the best one that has it).

    The description ends with the routing rule: where a message naming no skill goes
    (``default_agent``, else the only live agent), or that it is refused.
    """
    profiles = list(profiles)
    live = sorted({p.name for p in profiles})
    found: dict[str, tuple[str, list[str]]] = {}
    for profile in profiles:
        for cap in profile.capabilities:
            found.setdefault(cap.id, (cap.description or cap.name, []))[1].append(profile.name)
    skills = [
        AgentSkill(
            id=cap_id,
            name=cap_id,
            description=text or f"served by {', '.join(sorted(set(agents)))}",
            tags=["capability", *sorted(set(agents))],
            examples=[f'metadata {{"skillId": "{cap_id}"}} with a text or data part'],
        )
        for cap_id, (text, agents) in sorted(found.items())
    ]
    rule = _routing(url, live, default_agent)
    text = f"{description.rstrip('. ')}. {rule}" if description.strip() else rule
    return _card(name, text, url, skills, auth)


def agent_card(name: str, url: str, instances: list[AgentProfile], auth: Authenticator) -> AgentCard:
    """One skill per action of the agent; schemas in the actions extension."""
    first = max(instances, key=lambda p: p.version)
    meta = first.metadata or {}
    listed = meta.get("actions")
    actions = sorted(a for a in listed if isinstance(a, str)) if isinstance(listed, list) else []
    specs = meta.get("actionSpecs") if isinstance(meta.get("actionSpecs"), dict) else {}
    tags = sorted({cap.id for p in instances for cap in p.capabilities})
    skills = []
    for action in actions:
        spec = specs.get(action) if isinstance(specs, dict) else None
        text = spec.get("description") if isinstance(spec, dict) else None
        skills.append(
            AgentSkill(
                id=action,
                name=action,
                description=text if isinstance(text, str) and text else f"{name}.{action}",
                tags=tags or [name],
                examples=[json.dumps({"action": action, "params": {}})],
            )
        )
    extension = AgentExtension(
        uri=ACTIONS_EXTENSION,
        description="Actions and their input JSON Schemas; call one with a data part "
        '{"action": <name>, "params": {...}}, or text for the default action',
        params={
            "actions": {a: (specs.get(a) if isinstance(specs, dict) else None) or {} for a in actions},
            "defaultAction": meta.get("defaultAction")
            if isinstance(meta.get("defaultAction"), str)
            else None,
            "instances": len(instances),
        },
    )
    return _card(name, first.description, url, skills, auth, version=first.version, extensions=[extension])


def card_body(card: AgentCard) -> tuple[bytes, str]:
    """The card's JSON (1.0 with the 0.3 keys merged in) and its ETag."""
    data = json.dumps(agent_card_json(card), separators=(",", ":"), sort_keys=True).encode()
    return data, 'W/"' + hashlib.sha256(data).hexdigest()[:32] + '"'
