"""Runtime settings, from keyword arguments or the environment."""

from __future__ import annotations

import os
import ssl
from collections.abc import Mapping
from typing import Any

import msgspec

from bus.wire import DEFAULT_MAX_DEPTH, DEFAULT_MAX_HOPS, DEFAULT_TTL_MS
from transports import NatsTransport

__all__ = ["ENVIRONMENT", "Settings", "connect_nats"]

# Environment variable -> Settings field. Documented in the README's Configuration table.
ENVIRONMENT: dict[str, str] = {
    "NATS_URL": "nats_url",
    "REDIS_URL": "redis_url",
    "A2A_NAMESPACE": "namespace",
    "A2A_HEARTBEAT_INTERVAL": "heartbeat_interval",
    "A2A_TIMEOUT": "default_timeout",
    "A2A_MAX_HOPS": "max_hops",
    "A2A_MAX_DEPTH": "max_depth",
    "A2A_MAX_PAYLOAD": "max_payload",
    "A2A_CLIENT_NAME": "client_name",
    "A2A_ROSTER": "roster",
    "A2A_AUDIT": "audit",
    "A2A_HEALTH_PORT": "health_port",
    "A2A_CONNECT_TIMEOUT": "connect_timeout",
    "NATS_USER": "nats_user",
    "NATS_PASSWORD": "nats_password",
    "NATS_TOKEN": "nats_token",
    "NATS_NKEY_SEED": "nats_nkey_seed",
    "NATS_CREDS": "nats_creds",
    "NATS_TLS_CA": "nats_tls_ca",
    "NATS_TLS_CERT": "nats_tls_cert",
    "NATS_TLS_KEY": "nats_tls_key",
}


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    """How a runtime connects and which limits it applies by default."""

    nats_url: str = "nats://127.0.0.1:4222"
    """One or more NATS server URLs, comma-separated."""
    redis_url: str | None = "redis://127.0.0.1:6379/0"
    """Registry server; None runs without a registry (routing by name only)."""
    namespace: str = "default"
    heartbeat_interval: float = 1.0
    default_timeout: float = DEFAULT_TTL_MS / 1000
    max_hops: int = DEFAULT_MAX_HOPS
    max_depth: int = DEFAULT_MAX_DEPTH
    max_payload: int | None = None
    """Refuse envelopes above this many bytes (the server's max_payload always applies)."""
    client_name: str = "client"
    """sourceAgentId of calls made from outside any agent (scripts, the CLI)."""
    roster: str | None = None
    """Path of a roster file (YAML or TOML) with per-agent permissions."""
    audit: bool = True
    """Publish an audit record for every exchange."""
    health_port: int | None = None
    """Serve /livez, /readyz and /healthz on this port (``a2a serve``)."""
    connect_timeout: float = 10.0
    """How long to keep trying to reach NATS at start-up before giving up."""
    nats_user: str | None = None
    nats_password: str | None = None
    nats_token: str | None = None
    nats_nkey_seed: str | None = None
    """An NKey user seed (``SU...``) or the path of a file holding one."""
    nats_creds: str | None = None
    nats_tls_ca: str | None = None
    nats_tls_cert: str | None = None
    nats_tls_key: str | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Settings from environment variables (see ``ENVIRONMENT``), then ``overrides``."""
        env = os.environ if env is None else env
        values: dict[str, Any] = {
            field: env[var] for var, field in ENVIRONMENT.items() if env.get(var, "") != ""
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        return msgspec.convert(values, cls, strict=False)

    def tls_context(self) -> ssl.SSLContext | None:
        """A client TLS context when any TLS setting is given."""
        if not (self.nats_tls_ca or self.nats_tls_cert):
            return None
        ctx = ssl.create_default_context(cafile=self.nats_tls_ca)
        if self.nats_tls_cert:
            ctx.load_cert_chain(self.nats_tls_cert, self.nats_tls_key)
        return ctx


async def connect_nats(settings: Settings, *, name: str | None = None) -> NatsTransport:
    """A NATS connection as ``settings`` describe it: servers, credentials, TLS.

    Raises:
        TransportError: no server could be reached or authentication failed.
    """
    return await NatsTransport.connect(
        settings.nats_url,
        name=name,
        user=settings.nats_user,
        password=settings.nats_password,
        token=settings.nats_token,
        nkeys_seed=settings.nats_nkey_seed,
        creds_file=settings.nats_creds,
        tls=settings.tls_context(),
        connect_wait=settings.connect_timeout,
    )
