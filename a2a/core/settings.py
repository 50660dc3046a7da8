"""Runtime settings, from keyword arguments or the environment.

Settings check themselves when built: a bad value raises ``ValueError`` naming the field
(and, from :meth:`Settings.from_env`, the environment variable), so a typo in a
deployment fails at start-up with one clear line instead of deep inside a call.

Where the servers are, first found: an explicit value (keyword, command-line option), the
environment, the dev cluster file of a running ``a2a up`` (:func:`read_dev_cluster`), the defaults.
"""

from __future__ import annotations

import logging
import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, NamedTuple
from urllib.parse import urlsplit

import msgspec

from bus.subjects import identity_token, validate_name
from bus.wire import DEFAULT_MAX_DEPTH, DEFAULT_MAX_HOPS, DEFAULT_TTL_MS
from discovery.cluster import is_cluster_url, parse_cluster_url

__all__ = [
    "ENVIRONMENT",
    "MAX_SECONDS",
    "NATS_SCHEMES",
    "REDIS_SCHEMES",
    "DevCluster",
    "SettingError",
    "Settings",
    "check_nats_url",
    "check_redis_url",
    "dev_cluster_file",
    "read_dev_cluster",
]

MAX_SECONDS = 7 * 24 * 3600.0
"""Longest timeout or interval a setting accepts (a week): beyond it ``ttlMs`` stops being sensible."""
NATS_SCHEMES = ("nats", "tls", "ws", "wss")
REDIS_SCHEMES = ("redis", "rediss", "unix", "redis+cluster", "rediss+cluster")
_MAX_COUNT = 1_000_000  # hops, depth: far above any real delegation chain
_MAX_PAYLOAD = 1 << 30
_MAX_BUDGET = (1 << 63) - 1  # the wire carries budgets as 64-bit integers
_KEY_TOKEN = re.compile(r"^[A-Za-z0-9]+$")
_SECONDS = (  # settings in seconds
    "heartbeat_interval", "default_timeout", "connect_timeout", "max_ttl", "task_ack_wait", "max_task_ttl",
)  # fmt: skip

# Environment variable -> Settings field. Documented in docs/reference/settings.md (checked by tests/docs).
ENVIRONMENT: dict[str, str] = {
    "NATS_URL": "nats_url", "REDIS_URL": "redis_url", "A2A_NAMESPACE": "namespace",
    "A2A_HEARTBEAT_INTERVAL": "heartbeat_interval", "A2A_TRUST_FLOOR": "trust_floor",
    "A2A_TIMEOUT": "default_timeout", "A2A_MAX_HOPS": "max_hops", "A2A_MAX_DEPTH": "max_depth",
    "A2A_OBJECTIVE_WINDOW": "objective_window", "A2A_MAX_PAYLOAD": "max_payload",
    "A2A_CLIENT_NAME": "client_name", "A2A_ROSTER": "roster", "A2A_OPEN": "open", "A2A_AUDIT": "audit",
    "A2A_REDACT_PARAMS": "redact_params", "A2A_HISTORY_CAPTURE": "history_capture",
    "A2A_HEALTH_PORT": "health_port", "A2A_CONNECT_TIMEOUT": "connect_timeout", "A2A_MAX_TTL": "max_ttl",
    "A2A_TASKS": "tasks", "A2A_TASK_ACK_WAIT": "task_ack_wait", "A2A_MAX_TASK_TTL": "max_task_ttl",
    "A2A_MAX_BUDGET": "max_budget", "A2A_IDENTITY": "identity", "A2A_GRANT_KEYS": "grant_keys",
    "A2A_GRANT_SEED": "grant_seed", "A2A_REQUIRE_GRANTS": "require_grants", "NATS_USER": "nats_user",
    "NATS_PASSWORD": "nats_password", "NATS_TOKEN": "nats_token", "NATS_NKEY_SEED": "nats_nkey_seed",
    "NATS_CREDS": "nats_creds", "NATS_TLS_CA": "nats_tls_ca", "NATS_TLS_CERT": "nats_tls_cert",
    "NATS_TLS_KEY": "nats_tls_key", "A2A_PEER_PROTOCOL": "peer_protocol",
}  # fmt: skip


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    """How a runtime connects and which limits it applies by default."""

    nats_url: str = "nats://127.0.0.1:4222"
    """One or more NATS server URLs, comma-separated."""
    redis_url: str | None = "redis://127.0.0.1:6379/0"
    """Registry server; None runs without a registry (routing by name only)."""
    namespace: str = "default"
    heartbeat_interval: float = 1.0
    trust_floor: float = 0.2
    """Routing by capability skips instances whose published trust is under this (0..1)."""
    default_timeout: float = DEFAULT_TTL_MS / 1000
    max_hops: int = DEFAULT_MAX_HOPS
    max_depth: int = DEFAULT_MAX_DEPTH
    objective_window: float = 60.0
    """Seconds after a delegation's objective was done during which the same caller giving the
    same agent the same objective again, in the same conversation, is a cycle
    (CYCLE_DETECTED); 0: only an objective still in progress is."""
    max_payload: int | None = None
    """Refuse envelopes above this many bytes (the server's max_payload always applies)."""
    peer_protocol: Literal["auto", "1.3", "1.4", "1.5"] = "auto"  # requests' and audit's form (bus.forms)
    client_name: str = "client"
    """sourceAgentId of calls made from outside any agent (scripts, the CLI)."""
    roster: str | None = None
    """Path of a roster file (YAML or TOML) with per-agent permissions."""
    open: bool = False
    """Development: without a roster or credentials, every agent may call every other. Off
    (the default), an agent no roster lists may call no other agent (seed 000's
    ``allow_sub_agent_calls`` is false by default); calls from outside any agent work either way."""
    audit: bool = True
    """Publish an audit record for every exchange."""
    redact_params: bool = True
    """Redact secrets and personal data in the parameters of every call, task and notification
    sent from here; an agent's ``redact_params`` and a call's own override it."""
    history_capture: bool = True
    """Append every call an agent here handles, and its answer, to its conversation's history
    (with Redis), and keep the conversation's summary."""
    health_port: int | None = None
    """Serve /livez, /readyz and /healthz on this port (``a2a serve``)."""
    connect_timeout: float = 1.0
    """Seconds to keep trying to reach NATS at start-up (then ``UNAVAILABLE``; at once for a server of
    another protocol). Once connected, a runtime reconnects for ever, each attempt allowed 2 s at least."""
    max_ttl: float = 600.0
    """Longest time, in seconds, this runtime's agents give a request, whatever its ``ttlMs`` asks."""
    tasks: bool = False
    """Keep durable tasks on JetStream: ``rt.submit`` works, and agents served here take theirs."""
    task_ack_wait: float = 30.0
    """Seconds after which a task whose instance stopped keeping it alive goes to another."""
    max_task_ttl: float = 7 * 24 * 3600.0
    """Longest time, in seconds, a durable task may take from submission to its end."""
    max_budget: int | None = None
    """Most tokens a request received here may spend, whatever its ``budget`` says (None: no cap)."""
    identity: str | None = None
    """This runtime's name in subjects; default ``nats_user``, else ``anon``."""
    grant_keys: str | None = None
    """Public keys (comma-separated NKeys, ``U...``) of the entry points whose user grants are trusted."""
    grant_seed: str | None = None
    """This process's entry-point signing key (an NKey user seed, or a file holding one): calls it
    makes with a ``user_id`` carry a grant signed by it."""
    require_grants: bool = False
    """Refuse every request that carries no valid user grant."""
    nats_user: str | None = None
    nats_password: str | None = None
    nats_token: str | None = None
    nats_nkey_seed: str | None = None
    """An NKey user seed (``SU...``) or the path of a file holding one."""
    nats_creds: str | None = None
    nats_tls_ca: str | None = None
    nats_tls_cert: str | None = None
    nats_tls_key: str | None = None

    @property
    def credentials(self) -> bool:
        """True when this runtime authenticates to NATS: the server then proves who sent what."""
        return bool(self.nats_user or self.nats_token or self.nats_nkey_seed or self.nats_creds)

    @property
    def name(self) -> str:
        """This runtime's identity token in subjects."""
        return identity_token(self.identity or self.nats_user or "anon")

    @property
    def proven(self) -> bool:
        """The server proves who publishes: credentials with a user name (``NATS_USER`` or
        ``A2A_IDENTITY``). A shared token proves nothing about the sender, so it is not enough."""
        return self.credentials and bool(self.identity or self.nats_user)

    def __post_init__(self) -> None:
        _check_urls(self)
        _check_numbers(self)
        _check_names(self)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Settings from environment variables (see ``ENVIRONMENT``), then ``overrides``.

        Without ``env``: the process's, and where neither it nor ``overrides`` names a NATS server,
        the dev cluster file of a running ``a2a up`` for the variables it leaves unset.

        Raises:
            ValueError: a value does not convert or fails its check; the message names the
                environment variable it came from (or the field, for an override).
        """
        given = {k: v for k, v in overrides.items() if v is not None}
        if env is None:  # the process's: with the servers of `a2a up`, where it names none
            env = os.environ
            found = None if given.get("nats_url") or env.get("NATS_URL") else read_dev_cluster(env)
            if found is not None and found.running:
                env = {**env, **{k: v for k, v in found.values.items() if not env.get(k)}}
            elif found is not None:
                logging.getLogger("a2a.settings").info("ignoring %s: its a2a up is gone", found.path)
        sources = {
            field: var for var, field in ENVIRONMENT.items() if env.get(var, "") != "" and field not in given
        }
        values: dict[str, Any] = {field: env[var] for field, var in sources.items()}
        values.update(given)
        try:
            return msgspec.convert(values, cls, strict=False)
        except msgspec.ValidationError as exc:
            raise _explain(exc, values, sources) from None


_DEV = {"NATS_URL", "REDIS_URL", "A2A_OPEN"}  # what the dev cluster file sets, with A2A_DEV_PID


class DevCluster(NamedTuple):
    """The servers of an ``a2a up``, and whether it still runs (else they are gone with it)."""

    path: Path
    values: dict[str, str]
    pid: int
    running: bool


def dev_cluster_file(env: Mapping[str, str] | None = None) -> Path:
    """``A2A_DEV_FILE``, else ``$XDG_CONFIG_HOME/a2a/dev.env`` (``~/.config/a2a/dev.env``)."""
    env = os.environ if env is None else env
    config = env.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(env.get("A2A_DEV_FILE") or Path(config) / "a2a" / "dev.env")


def read_dev_cluster(env: Mapping[str, str] | None = None) -> DevCluster | None:
    """The dev cluster file of ``a2a up`` (``export NAME=value`` lines), or None; ValueError naming
    the file when it cannot be read or is not one ``a2a up`` writes."""
    path = dev_cluster_file(env)
    try:
        lines = [line.strip() for line in path.read_bytes()[: 1 << 16].decode().splitlines()]
    except FileNotFoundError:
        return None
    except (OSError, UnicodeError) as exc:
        raise ValueError(f"cannot read the dev cluster file {path}: {exc}") from None
    pairs = [line.removeprefix("export ").partition("=") for line in lines if line and line[0] != "#"]
    values = {name.strip(): value.strip() for name, _, value in pairs}
    pid = values.pop("A2A_DEV_PID", "")
    try:
        if not (pid.isdigit() and int(pid) > 0 and {"NATS_URL", "REDIS_URL"} <= set(values) <= _DEV):
            raise ValueError("expected A2A_DEV_PID, NATS_URL, REDIS_URL and at most A2A_OPEN")
        check_nats_url(values["NATS_URL"]), check_redis_url(values["REDIS_URL"])
    except ValueError as exc:
        raise ValueError(f"{path} is not a dev cluster file of a2a up: {exc}; remove it") from None
    return DevCluster(path, values, int(pid), _running(int(pid)))


def _running(pid: int) -> bool:
    """Whether process ``pid`` is alive and, where /proc tells, an ``a2a`` command."""
    try:
        os.kill(pid, 0)
        return b"a2a" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except ProcessLookupError:
        return False
    except OSError:  # another user's process, or no /proc
        return True


class SettingError(ValueError):
    """A setting has a value it cannot have; ``field`` names it."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"invalid {field}: {problem}")
        self.field = field
        self.problem = problem


def _redacted(url: str) -> str:
    """``url`` without the password it may carry, fit to show in an error message."""
    return re.sub(r"//[^@/]*@", "//***@", url)[:200]


def _check_url(url: str, schemes: tuple[str, ...]) -> None:
    parts = urlsplit(url)
    expected = f"expected {schemes[0]}://host:port (schemes: {', '.join(schemes)})"
    if parts.scheme not in schemes:
        raise ValueError(f"{_redacted(url)!r} has no supported scheme; {expected}")
    if parts.scheme == "unix":
        if not parts.path:
            raise ValueError(f"{_redacted(url)!r} names no socket path; expected unix:///path/to/socket")
        return
    if not parts.hostname:
        raise ValueError(f"{_redacted(url)!r} names no host; {expected}")
    try:
        port = parts.port
    except ValueError:
        port = -1
    if port is not None and not 1 <= port <= 65535:
        raise ValueError(f"{_redacted(url)!r} has a port outside 1-65535")


def check_nats_url(value: str) -> str:
    """Return ``value`` if it is one or more comma-separated NATS server URLs.

    Raises:
        ValueError: an entry is empty, has another scheme than nats/tls/ws/wss, no host,
            or a port outside 1-65535.
    """
    urls = [url.strip() for url in value.split(",")]
    if not all(urls):
        raise ValueError("expected one or more comma-separated nats://host:port URLs, got an empty entry")
    for url in urls:
        _check_url(url, NATS_SCHEMES)
    return value


def check_redis_url(value: str) -> str:
    """Return ``value`` if it is a Redis URL (``redis://``, ``rediss://`` or ``unix://``), or a
    Redis Cluster's (``redis+cluster://host1:port1,host2:port2``, ``rediss+cluster://``).

    Raises:
        ValueError: another scheme, no host (or socket path), a bad port or database number.
    """
    if is_cluster_url(value):
        parse_cluster_url(value)
        return value
    _check_url(value, REDIS_SCHEMES)
    parts = urlsplit(value)
    database = parts.path.strip("/")
    if parts.scheme != "unix" and database and not database.isdigit():
        raise ValueError(f"{_redacted(value)!r}: the path must be a database number, as in redis://h:6379/0")
    return value


def _check_urls(s: Settings) -> None:
    checks = (("nats_url", check_nats_url, s.nats_url), ("redis_url", check_redis_url, s.redis_url))
    for field, check, value in checks:
        if value is None and field == "redis_url":
            continue
        if not isinstance(value, str):
            raise SettingError(field, "must be a URL string")
        try:
            check(value)
        except ValueError as exc:
            raise SettingError(field, str(exc)) from None
    if s.nats_tls_key and not s.nats_tls_cert:
        raise SettingError("nats_tls_key", "needs nats_tls_cert (NATS_TLS_CERT): a key alone proves nothing")


def _check_seconds(field: str, value: object) -> None:
    """A finite number of seconds above zero and at most MAX_SECONDS."""
    number = value if isinstance(value, int | float) and not isinstance(value, bool) else math.nan
    if not (math.isfinite(number) and 0 < number <= MAX_SECONDS):
        raise SettingError(
            field, f"must be a finite number of seconds above 0 and at most {MAX_SECONDS:g}; got {value!r}"
        )


def _check_int(field: str, value: object, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise SettingError(field, f"must be an integer from {low} to {high}; got {value!r}")


def _check_numbers(s: Settings) -> None:
    floor = s.trust_floor
    if isinstance(floor, bool) or not isinstance(floor, int | float) or not 0.0 <= floor <= 1.0:
        raise SettingError("trust_floor", f"must be a number from 0 to 1; got {floor!r}")
    for field in _SECONDS:
        _check_seconds(field, getattr(s, field))
    _check_int("max_hops", s.max_hops, 1, _MAX_COUNT)
    _check_int("max_depth", s.max_depth, 0, _MAX_COUNT)
    if s.max_payload is not None:
        _check_int("max_payload", s.max_payload, 1, _MAX_PAYLOAD)
    if s.max_budget is not None:
        _check_int("max_budget", s.max_budget, 0, _MAX_BUDGET)
    if s.health_port is not None:
        _check_int("health_port", s.health_port, 0, 65535)  # 0: any free port


def _check_names(s: Settings) -> None:
    """Values that end up as one token of a NATS subject (or an id next to them)."""
    for field in ("namespace", "client_name", "identity"):
        value = getattr(s, field)
        if value is None and field == "identity":
            continue
        kind = field.replace("_", " ")
        try:
            validate_name(kind, value if isinstance(value, str) else "")
        except ValueError as exc:
            raise SettingError(field, str(exc).removeprefix(f"invalid {kind} ")) from None
    if s.grant_keys is not None:
        keys = [key.strip() for key in s.grant_keys.split(",")]
        if not all(_KEY_TOKEN.match(key) for key in keys):
            raise SettingError("grant_keys", "expected comma-separated public keys (letters, digits: U...)")


_EXPECTED = {bool: "true or false (or 1 or 0)", int: "an integer", float: "a number"}


def _expected(field: str) -> str:
    """What kind of value ``field`` takes, in words."""
    info = next((f for f in msgspec.structs.fields(Settings) if f.name == field), None)
    kinds = () if info is None else info.type.__args__ if hasattr(info.type, "__args__") else (info.type,)
    return next((_EXPECTED[k] for k in kinds if k in _EXPECTED), "a string" if info else "a valid value")


def _explain(
    exc: msgspec.ValidationError, values: Mapping[str, Any], sources: Mapping[str, str]
) -> ValueError:
    """The conversion error of ``from_env`` as one message naming the variable or field at fault."""
    cause = exc.__cause__
    if isinstance(cause, SettingError):
        field, problem = cause.field, cause.problem
    else:
        at = re.search(r" - at `\$\.(\w+)`$", str(exc))
        if at is None:
            return ValueError(f"invalid settings: {exc}")
        field = at.group(1)
        shown = repr(values.get(field))[:60]
        problem = f"expected {_expected(field)}; got {shown}"
    var = sources.get(field)
    return ValueError(f"invalid {var} ({field}): {problem}" if var else f"invalid {field}: {problem}")
