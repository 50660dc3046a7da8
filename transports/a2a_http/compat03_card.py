"""Agent cards across versions: read a 1.0, 0.3 or merged card; write the card SDK servers serve.

A 0.3 card names one endpoint at the top level (``url``, ``preferredTransport``,
``protocolVersion``) plus ``additionalInterfaces: [{url, transport}]``, lists requirements as
``security: [{scheme: [scopes]}]`` and writes schemes flat with a ``type``
(``{"type": "apiKey", "in": "header", "name": "X-API-Key"}``).

``parse_agent_card`` reads any card the way the SDK's card resolver does: the 0.3 keys are
removed, turned into ``supportedInterfaces`` only when the card has none (every interface then
gets the top-level ``protocolVersion``, default ``"0.3.0"``), and so on; a merged card therefore
reads as its 1.0 half.

``agent_card_json`` writes what the SDK server serves at ``/.well-known/agent-card.json``: the
1.0 card with the 0.3 card merged in (a 0.3 key is added where the 1.0 object has none,
objects merge recursively, lists merge element by element). The 0.3 half describes the
interfaces whose ``protocolVersion`` is empty or 0.x from 0.3 on; without one, the card is
1.0 only.
"""

from __future__ import annotations

from typing import Any, TypeAlias

from msgspec import field

from ._base import A2AStruct, Name
from .card import (
    BINDING_JSONRPC,
    AgentCard,
    AgentCardSignature,
    AgentExtension,
    AgentInterface,
    AgentProvider,
    AgentSkill,
    AuthorizationCodeOAuthFlow,
    ClientCredentialsOAuthFlow,
    ImplicitOAuthFlow,
    PasswordOAuthFlow,
    SecurityRequirement,
    SecurityScheme,
)
from .codec import convert, to_builtins
from .versions import PROTOCOL_VERSION_0_3, is_legacy_version

__all__ = ["AgentCard03", "agent_card_json", "card_to_03", "parse_agent_card"]

LegacyRequirement: TypeAlias = dict[str, list[str]]


class AgentInterface03(A2AStruct):
    url: str
    transport: Name


class AgentCapabilities03(A2AStruct):
    streaming: bool | None = None
    push_notifications: bool | None = None
    state_transition_history: bool | None = None
    extensions: list[AgentExtension] = field(default_factory=list)


class APIKeySecurityScheme03(A2AStruct, tag_field="type", tag="apiKey"):
    name: Name
    location: Name = field(name="in")
    description: str = ""


class HTTPAuthSecurityScheme03(A2AStruct, tag_field="type", tag="http"):
    scheme: Name
    bearer_format: Name = ""
    description: str = ""


class OAuthFlows03(A2AStruct):
    """1.0's flows but the device code flow, which 0.3 does not have."""

    authorization_code: AuthorizationCodeOAuthFlow | None = None
    client_credentials: ClientCredentialsOAuthFlow | None = None
    implicit: ImplicitOAuthFlow | None = None
    password: PasswordOAuthFlow | None = None


class OAuth2SecurityScheme03(A2AStruct, tag_field="type", tag="oauth2"):
    flows: OAuthFlows03
    oauth2_metadata_url: str = ""
    description: str = ""


class OpenIdConnectSecurityScheme03(A2AStruct, tag_field="type", tag="openIdConnect"):
    open_id_connect_url: str
    description: str = ""


class MutualTLSSecurityScheme03(A2AStruct, tag_field="type", tag="mutualTLS"):
    description: str = ""


SecurityScheme03: TypeAlias = (
    APIKeySecurityScheme03
    | HTTPAuthSecurityScheme03
    | OAuth2SecurityScheme03
    | OpenIdConnectSecurityScheme03
    | MutualTLSSecurityScheme03
)


class AgentSkill03(A2AStruct):
    id: Name
    name: Name
    description: str
    tags: list[Name] = field(default_factory=list)
    examples: list[str] = field(default_factory=list)
    input_modes: list[Name] = field(default_factory=list)
    output_modes: list[Name] = field(default_factory=list)
    security: list[LegacyRequirement] = field(default_factory=list)


class AgentCard03(A2AStruct):
    """The 0.3 card (``protocolVersion`` ``"0.3.0"`` when the agent does not say)."""

    name: Name
    description: str
    url: str
    version: Name
    capabilities: AgentCapabilities03
    default_input_modes: list[Name] = field(default_factory=list)
    default_output_modes: list[Name] = field(default_factory=list)
    skills: list[AgentSkill03] = field(default_factory=list)
    protocol_version: Name = ""
    preferred_transport: Name = ""
    additional_interfaces: list[AgentInterface03] = field(default_factory=list)
    provider: AgentProvider | None = None
    documentation_url: str | None = None
    icon_url: str | None = None
    security_schemes: dict[str, SecurityScheme03] = field(default_factory=dict)
    security: list[LegacyRequirement] = field(default_factory=list)
    signatures: list[AgentCardSignature] = field(default_factory=list)
    supports_authenticated_extended_card: bool | None = None


_SCHEMES_03: dict[str, type[SecurityScheme03]] = {
    "apiKeySecurityScheme": APIKeySecurityScheme03,
    "httpAuthSecurityScheme": HTTPAuthSecurityScheme03,
    "oauth2SecurityScheme": OAuth2SecurityScheme03,
    "openIdConnectSecurityScheme": OpenIdConnectSecurityScheme03,
    "mtlsSecurityScheme": MutualTLSSecurityScheme03,
}
"""The 1.0 ``oneof`` key of each security scheme, and its 0.3 Struct (tagged with the 0.3 ``type``)."""
_SCHEME_WRAPPERS = {scheme.__struct_config__.tag: wrapper for wrapper, scheme in _SCHEMES_03.items()}
_NAMES_03 = {"location": "in"}
"""The keys of a scheme that 0.3 names otherwise (its API key's ``in``)."""


# Reading ---------------------------------------------------------------------------------


def _requirements(legacy: object) -> object:
    """``[{name: [scopes]}]`` as ``[{"schemes": {name: {"list": [scopes]}}}]``; other shapes as they are."""
    if not isinstance(legacy, list):
        return legacy
    return [
        {"schemes": {name: {"list": scopes} for name, scopes in item.items()}}
        if isinstance(item, dict)
        else item
        for item in legacy
    ]


def _scheme(scheme: object) -> object:
    """A flat 0.3 scheme as its 1.0 ``oneof`` wrapper; a 1.0 (or merged) scheme as it is."""
    if not isinstance(scheme, dict) or any(key in scheme for key in _SCHEME_WRAPPERS.values()):
        return scheme
    kind = scheme.get("type")
    wrapper = _SCHEME_WRAPPERS.get(kind) if isinstance(kind, str) else None
    if wrapper is None:
        return scheme
    inner = {k: v for k, v in scheme.items() if k != "type" and k not in _NAMES_03.values()}
    inner.update({name: scheme[name_03] for name, name_03 in _NAMES_03.items() if name_03 in scheme})
    return {wrapper: inner}


def parse_agent_card(obj: Any) -> AgentCard:
    """Read a decoded card in any of the 1.0, 0.3 and merged shapes.

    Raises ``msgspec.ValidationError`` when the result is not a valid 1.0 card.
    """
    if not isinstance(obj, dict):
        return convert(obj, AgentCard)
    card = dict(obj)
    if card.pop("supportsAuthenticatedExtendedCard", None):
        caps = card.get("capabilities")
        if isinstance(caps, dict) and "extendedAgentCard" not in caps:
            card["capabilities"] = {**caps, "extendedAgentCard": True}
    url = card.pop("url", None)
    binding = card.pop("preferredTransport", None) or BINDING_JSONRPC
    version = card.pop("protocolVersion", None) or "0.3.0"
    additional = card.pop("additionalInterfaces", None) or []
    if "supportedInterfaces" not in card and url:
        interfaces = [{"url": url, "protocolBinding": binding, "protocolVersion": version}]
        if isinstance(additional, list):
            interfaces += [
                {"url": i.get("url"), "protocolBinding": i.get("transport"), "protocolVersion": version}
                for i in additional
                if isinstance(i, dict)
            ]
        card["supportedInterfaces"] = interfaces
    legacy = card.pop("security", None)
    if "securityRequirements" not in card and legacy is not None:
        card["securityRequirements"] = _requirements(legacy)
    if isinstance(card.get("skills"), list):
        card["skills"] = [_skill(skill) for skill in card["skills"]]
    if isinstance(card.get("securitySchemes"), dict):
        card["securitySchemes"] = {name: _scheme(s) for name, s in card["securitySchemes"].items()}
    return convert(card, AgentCard)


def _skill(skill: object) -> object:
    if not isinstance(skill, dict) or "security" not in skill:
        return skill
    out = {k: v for k, v in skill.items() if k != "security"}
    if "securityRequirements" not in out:
        out["securityRequirements"] = _requirements(skill["security"])
    return out


# Writing ---------------------------------------------------------------------------------


def _legacy_requirement(requirement: SecurityRequirement) -> LegacyRequirement:
    return {name: list(scopes.items) for name, scopes in requirement.schemes.items()}


def _scheme_to_03(scheme: SecurityScheme) -> SecurityScheme03:
    """The 1.0 scheme's JSON flattened (``_scheme`` in reverse), read as the 0.3 Struct."""
    [(wrapper, inner)] = to_builtins(scheme).items()
    return convert({_NAMES_03.get(key, key): value for key, value in inner.items()}, _SCHEMES_03[wrapper])


def _skill_to_03(skill: AgentSkill) -> AgentSkill03:
    return AgentSkill03(
        id=skill.id,
        name=skill.name,
        description=skill.description,
        tags=skill.tags,
        examples=skill.examples,
        input_modes=skill.input_modes,
        output_modes=skill.output_modes,
        security=[_legacy_requirement(r) for r in skill.security_requirements],
    )


def card_to_03(card: AgentCard) -> AgentCard03 | None:
    """The 0.3 view of a card, or ``None`` when no interface speaks 0.3."""
    legacy: list[AgentInterface] = [
        i
        for i in card.supported_interfaces
        if not i.protocol_version or is_legacy_version(i.protocol_version)
    ]
    if not legacy:
        return None
    primary, rest = legacy[0], legacy[1:]
    caps = card.capabilities
    return AgentCard03(
        name=card.name,
        description=card.description,
        url=primary.url,
        version=card.version,
        capabilities=AgentCapabilities03(
            streaming=caps.streaming, push_notifications=caps.push_notifications, extensions=caps.extensions
        ),
        default_input_modes=card.default_input_modes,
        default_output_modes=card.default_output_modes,
        skills=[_skill_to_03(s) for s in card.skills],
        protocol_version=primary.protocol_version or PROTOCOL_VERSION_0_3,
        preferred_transport=primary.protocol_binding,
        additional_interfaces=[AgentInterface03(url=i.url, transport=i.protocol_binding) for i in rest],
        provider=card.provider,
        documentation_url=card.documentation_url,
        icon_url=card.icon_url,
        security_schemes={name: _scheme_to_03(s) for name, s in card.security_schemes.items()},
        security=[_legacy_requirement(r) for r in card.security_requirements],
        signatures=card.signatures,
        supports_authenticated_extended_card=True if caps.extended_agent_card else None,
    )


def _merge(into: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    for key, value in extra.items():
        if key not in into:
            into[key] = value
        elif isinstance(value, dict) and isinstance(into[key], dict):
            _merge(into[key], value)
        elif isinstance(value, list) and isinstance(into[key], list):
            for mine, theirs in zip(into[key], value, strict=False):
                if isinstance(mine, dict) and isinstance(theirs, dict):
                    _merge(mine, theirs)
    return into


def agent_card_json(card: AgentCard) -> dict[str, Any]:
    """The card as served to every client: 1.0 keys, plus 0.3 keys when a 0.3 interface exists."""
    out: dict[str, Any] = to_builtins(card)
    legacy = card_to_03(card)
    return _merge(out, to_builtins(legacy)) if legacy is not None else out
