"""The A2A 1.0 agent card and everything nested in it, as the protobuf JSON mapping writes it.

A card lists the agent's ``supportedInterfaces`` (URL, protocol binding ``JSONRPC`` or
``HTTP+JSON``, protocol version such as ``"1.0"`` or ``"0.3"``), its capabilities, skills,
security schemes and the security requirements that apply to every call.

Security schemes are a protobuf ``oneof``: ``{"apiKeySecurityScheme": {...}}``,
``{"httpAuthSecurityScheme": {...}}``... A security requirement is
``{"schemes": {"<scheme name>": {"list": ["scope", ...]}}}`` (an OR of these ANDs).

Cards served by SDK servers also carry the 0.3 top-level keys (``url``,
``preferredTransport``, ``security``...) and flattened 0.3 scheme keys; this Struct ignores
them. ``compat03_card.parse_agent_card`` reads any of the three shapes.
"""

from __future__ import annotations

from typing import Any

from msgspec import field

from ._base import A2AStruct, Name

__all__ = [
    "BINDING_GRPC",
    "BINDING_HTTP_JSON",
    "BINDING_JSONRPC",
    "APIKeySecurityScheme",
    "AgentCapabilities",
    "AgentCard",
    "AgentCardSignature",
    "AgentExtension",
    "AgentInterface",
    "AgentProvider",
    "AgentSkill",
    "AuthorizationCodeOAuthFlow",
    "ClientCredentialsOAuthFlow",
    "DeviceCodeOAuthFlow",
    "HTTPAuthSecurityScheme",
    "ImplicitOAuthFlow",
    "MutualTlsSecurityScheme",
    "OAuth2SecurityScheme",
    "OAuthFlows",
    "OpenIdConnectSecurityScheme",
    "PasswordOAuthFlow",
    "SecurityRequirement",
    "SecurityScheme",
    "StringList",
]

BINDING_JSONRPC = "JSONRPC"
BINDING_HTTP_JSON = "HTTP+JSON"
BINDING_GRPC = "GRPC"


class AgentInterface(A2AStruct):
    """One endpoint: where, which binding, which protocol version, optional tenant."""

    url: str
    protocol_binding: Name
    tenant: Name = ""
    protocol_version: Name = ""


class AgentProvider(A2AStruct):
    url: str
    organization: Name


class AgentExtension(A2AStruct):
    uri: str = ""
    description: str = ""
    required: bool = False
    params: dict[str, Any] | None = None


class AgentCapabilities(A2AStruct):
    """Optional features. ``None`` means the card does not say (protobuf ``optional``)."""

    streaming: bool | None = None
    push_notifications: bool | None = None
    extensions: list[AgentExtension] = field(default_factory=list)
    extended_agent_card: bool | None = None


class StringList(A2AStruct):
    """Scopes a security requirement asks of one scheme (``{"list": [...]}``)."""

    items: list[str] = field(default_factory=list, name="list")


class SecurityRequirement(A2AStruct):
    """Scheme name to required scopes; every scheme listed must be satisfied."""

    schemes: dict[str, StringList] = field(default_factory=dict)


class APIKeySecurityScheme(A2AStruct):
    """An API key; ``location`` is ``header``, ``query`` or ``cookie``, ``name`` the parameter."""

    location: Name
    name: Name
    description: str = ""


class HTTPAuthSecurityScheme(A2AStruct):
    """HTTP authentication; ``scheme`` is e.g. ``Bearer`` or ``Basic``."""

    scheme: Name
    description: str = ""
    bearer_format: Name = ""


class AuthorizationCodeOAuthFlow(A2AStruct):
    authorization_url: str
    token_url: str
    scopes: dict[str, str]
    refresh_url: str = ""
    pkce_required: bool = False


class ClientCredentialsOAuthFlow(A2AStruct):
    token_url: str
    scopes: dict[str, str]
    refresh_url: str = ""


class ImplicitOAuthFlow(A2AStruct):
    authorization_url: str = ""
    refresh_url: str = ""
    scopes: dict[str, str] = field(default_factory=dict)


class PasswordOAuthFlow(A2AStruct):
    token_url: str = ""
    refresh_url: str = ""
    scopes: dict[str, str] = field(default_factory=dict)


class DeviceCodeOAuthFlow(A2AStruct):
    device_authorization_url: str
    token_url: str
    scopes: dict[str, str]
    refresh_url: str = ""


class OAuthFlows(A2AStruct):
    authorization_code: AuthorizationCodeOAuthFlow | None = None
    client_credentials: ClientCredentialsOAuthFlow | None = None
    implicit: ImplicitOAuthFlow | None = None
    password: PasswordOAuthFlow | None = None
    device_code: DeviceCodeOAuthFlow | None = None


class OAuth2SecurityScheme(A2AStruct):
    flows: OAuthFlows
    description: str = ""
    oauth2_metadata_url: str = ""


class OpenIdConnectSecurityScheme(A2AStruct):
    open_id_connect_url: str
    description: str = ""


class MutualTlsSecurityScheme(A2AStruct):
    description: str = ""


class SecurityScheme(A2AStruct):
    """Exactly one scheme variant."""

    api_key_security_scheme: APIKeySecurityScheme | None = None
    http_auth_security_scheme: HTTPAuthSecurityScheme | None = None
    oauth2_security_scheme: OAuth2SecurityScheme | None = None
    open_id_connect_security_scheme: OpenIdConnectSecurityScheme | None = None
    mtls_security_scheme: MutualTlsSecurityScheme | None = None

    def __post_init__(self) -> None:
        present = [
            v
            for v in (
                self.api_key_security_scheme,
                self.http_auth_security_scheme,
                self.oauth2_security_scheme,
                self.open_id_connect_security_scheme,
                self.mtls_security_scheme,
            )
            if v is not None
        ]
        if len(present) != 1:
            raise ValueError(f"SecurityScheme needs exactly one variant; got {len(present)}")


class AgentSkill(A2AStruct):
    id: Name
    name: Name
    description: str
    tags: list[Name]
    examples: list[str] = field(default_factory=list)
    input_modes: list[Name] = field(default_factory=list)
    output_modes: list[Name] = field(default_factory=list)
    security_requirements: list[SecurityRequirement] = field(default_factory=list)


class AgentCardSignature(A2AStruct):
    """A detached JWS over the card: base64url protected header and signature."""

    protected: str
    signature: str
    header: dict[str, Any] | None = None


class AgentCard(A2AStruct):
    """The self-description an agent serves at ``/.well-known/agent-card.json``."""

    name: Name
    description: str
    supported_interfaces: list[AgentInterface]
    version: Name
    capabilities: AgentCapabilities
    default_input_modes: list[Name]
    default_output_modes: list[Name]
    skills: list[AgentSkill]
    provider: AgentProvider | None = None
    documentation_url: str | None = None
    security_schemes: dict[str, SecurityScheme] = field(default_factory=dict)
    security_requirements: list[SecurityRequirement] = field(default_factory=list)
    signatures: list[AgentCardSignature] = field(default_factory=list)
    icon_url: str | None = None
