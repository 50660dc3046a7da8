"""Redis ACL users generated from the roster: each agent writes only its own registry entries.

``a2a redis-config --roster roster.yaml --namespace prod --out users.acl`` writes an ACL
file for ``redis-server --aclfile users.acl``: one Redis user per roster agent (user name =
agent name), client users for callers outside any agent (the CLI, an HTTP gateway) and an
admin. Passwords are read at generation time from the environment variables
``A2A_REDIS_PASSWORD_<USER>`` and written as SHA-256 hashes (an ACL file cannot read the
environment); runtimes connect with ``REDIS_URL=redis://<user>:<password>@host:6379/0``.
ACL files have no comments, so the file says nothing of where it came from.

What the server then enforces, for every command and for every key a function touches:

* the ``default`` user is off: no unauthenticated access;
* an agent reads every key of its namespace, writes its own instance hashes only
  (``inst:<agent>-<8 hex digits>``, the instance ids the runtime makes, so an agent whose
  name is another's plus ``-suffix`` cannot match them), the shared indexes the registry
  functions maintain (``instances``, ``capsof``, ``cap:*``) and conversation history
  (``conv:*``, ``active:*``); it publishes and subscribes on the events channel only;
* a client reads the registry, reads and writes history and subscribes to the events
  channel, and may call only the registry functions that read (FCALL_RO);
* neither may run code of its own: no EVAL, EVALSHA, SCRIPT or FUNCTION LOAD/DELETE/
  FLUSH/RESTORE (a script that never ends would stall Redis for everyone), only FCALL /
  FCALL_RO of the registry's library, which the admin loads
  (``a2a redis-config --roster roster.yaml --load`` with ``REDIS_URL`` naming the admin);
* nor anything else: no FLUSHALL, KEYS, SCAN, CONFIG, DEBUG, ACL, SHUTDOWN, MONITOR,
  MODULE, REPLICAOF, ... Only the admin has every right.

Local views refuse an entry whose profile names another agent than its id's prefix, so
the key rights above decide which agent an instance may claim to be.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

import anyio
import redis.asyncio as aioredis
from redis.asyncio.cluster import ClusterNode, RedisCluster

from bus.errors import Unavailable
from bus.subjects import validate_name
from discovery import LIBRARY, load_library
from discovery.cluster import is_cluster_url, parse_cluster_url
from discovery.errors import redis_errors
from discovery.registry import RegistryKeys

from ..core.settings import check_redis_url
from ..delegation.roster import Roster
from .common import CommandError
from .nats_config import CLIENTS

__all__ = [
    "AGENT_COMMANDS",
    "CLIENT_COMMANDS",
    "MissingPassword",
    "agent_rules",
    "client_rules",
    "cmd_redis_config",
    "load_functions",
    "password_variable",
    "render_acl",
]

_CONNECTION = ("ping", "select")
_READ_FUNCTIONS = ("fcall_ro",)
"""The registry's reads run as FCALL_RO: Redis refuses writes from them, and read-only
key rights (``%R~``) let clients run them."""
_REGISTRY_READS = ("hget", "hmget", "hstrlen", "sscan", "zrevrange", "zscore", "exists", "pttl", "time")
"""What the registry's functions send on the caller's behalf: Redis checks the caller's
rights for each command a function runs, as for each key."""
_REGISTRY_WRITES = ("hset", "hdel", "del", "pexpire", "sadd", "srem", "zadd", "zrem")
_SWEEPER = ("zrange", "zrangebyscore", "get", "set")
"""The sweeper (any agent's runtime, one at a time) reads the expiry set and holds its lease."""
_HISTORY = (
    "hsetnx",
    "hget",
    "expire",
    "rpush",
    "ltrim",
    "lrange",
    "set",
    "get",
    "del",
    "multi",
    "exec",
    "discard",
)

AGENT_COMMANDS = tuple(
    dict.fromkeys(
        (
            *_CONNECTION,
            *_READ_FUNCTIONS,
            "fcall",
            *_REGISTRY_READS,
            *_REGISTRY_WRITES,
            *_SWEEPER,
            *_HISTORY,
            "publish",
            "subscribe",
            "unsubscribe",
        )
    )
)
"""Everything an agent's runtime sends, directly or from the registry's functions."""
CLIENT_COMMANDS = tuple(
    dict.fromkeys((*_CONNECTION, *_READ_FUNCTIONS, *_REGISTRY_READS, *_HISTORY, "subscribe", "unsubscribe"))
)
"""A runtime that hosts no agent: it follows the registry and keeps history, never registers."""
GATEWAY_USER = "gateway"
_TASKS = ("set", "get", "mget", "zadd", "zcard", "zrevrange", "zremrangebyscore", "pexpire", "exists", "del")
GATEWAY_COMMANDS = tuple(dict.fromkeys((*CLIENT_COMMANDS, *_TASKS, "publish")))
"""A client that also keeps A2A tasks (``a2a.gateway.tasks``) and shares them with its replicas."""

INSTANCE_SUFFIX = "[0-9a-f]" * 8
"""Glob of the 8 hex digits that end the instance ids the runtime makes (``reader-1a2b3c4d``)."""


class MissingPassword(ValueError):
    """A user's password variable is not set."""


def password_variable(user: str) -> str:
    """Environment variable holding ``user``'s password when the ACL file is generated."""
    return "A2A_REDIS_PASSWORD_" + re.sub(r"[^A-Za-z0-9]", "_", user).upper()


def _commands(commands: Iterable[str]) -> list[str]:
    return ["-@all", *(f"+{c}" for c in commands)]


def agent_rules(agent: str, namespace: str) -> list[str]:
    """ACL rules (after the password) of one agent's user."""
    keys = RegistryKeys(namespace)
    p = keys.prefix
    return [
        *_commands(AGENT_COMMANDS),
        f"%R~{p}*",
        f"~{p}inst:{validate_name('agent name', agent)}-{INSTANCE_SUFFIX}",
        f"~{keys.instances}",
        f"~{keys.capsof}",
        f"~{keys.expiry}",
        f"~{keys.sweeper}",
        f"~{p}cap:*",
        f"~{p}conv:*",
        f"~{p}active:*",
        f"&{keys.events}",
    ]


def client_rules(namespace: str) -> list[str]:
    """ACL rules (after the password) of a client user."""
    keys = RegistryKeys(namespace)
    p = keys.prefix
    return [*_commands(CLIENT_COMMANDS), f"%R~{p}*", f"~{p}conv:*", f"~{p}active:*", f"&{keys.events}"]


def gateway_rules(namespace: str) -> list[str]:
    """ACL rules of the A2A gateway: a client's, plus its tasks, replica keys and task channels."""
    p = RegistryKeys(namespace).prefix
    rules = client_rules(namespace)
    rules[0 : len(_commands(CLIENT_COMMANDS))] = _commands(GATEWAY_COMMANDS)
    return [*rules, f"~{p}task:*", f"~{p}tasks:*", f"~{p}gw:*", f"&{p}task-events:*", f"&{p}gw-cancel"]


def _password(user: str, passwords: Mapping[str, str]) -> str:
    variable = password_variable(user)
    password = passwords.get(variable)
    if not password:
        raise MissingPassword(f"set {variable} to the Redis password of user {user!r}")
    return "#" + hashlib.sha256(password.encode()).hexdigest()


def render_acl(
    roster: Roster,
    namespace: str,
    *,
    clients: Iterable[str] = CLIENTS,
    admin: str | None = "admin",
    passwords: Mapping[str, str] | None = None,
) -> str:
    """The ACL file: ``default`` off, then agents (sorted), clients and the admin.

    ``passwords`` maps variable names (:func:`password_variable`) to passwords; by
    default the process environment.

    Raises:
        MissingPassword: a user's variable is unset or empty.
    """
    env = os.environ if passwords is None else passwords
    users = [(agent, agent_rules(agent, namespace)) for agent in sorted(roster.agents)]
    for c in clients:
        rules = gateway_rules(namespace) if c == GATEWAY_USER else client_rules(namespace)
        users.append((validate_name("client user", c), rules))
    if admin:
        users.append((validate_name("admin user", admin), ["~*", "&*", "+@all"]))
    lines = ["user default reset off"]
    for user, rules in users:
        lines.append(" ".join(["user", user, "reset", "on", _password(user, env), *rules]))
    return "\n".join(lines) + "\n"


async def load_functions(url: str) -> None:
    """Load the registry's function library into the Redis at ``url`` (a user allowed to: the admin).

    On a Redis Cluster (``redis+cluster://``) every master gets it, so whichever holds a
    namespace's slot has it; load again after adding masters.

    Raises:
        Unavailable: Redis is unreachable, refuses the user, or is older than 7.
    """
    if is_cluster_url(url):  # functions live on each master: load them on every one
        seeds, options, tls = parse_cluster_url(url)
        nodes = [ClusterNode(host, port) for host, port in seeds]
        cluster = RedisCluster(startup_nodes=nodes, ssl=tls, socket_connect_timeout=5.0, **options)
        try:
            with redis_errors("loading the registry's functions"):
                await load_library(cluster, target_nodes=RedisCluster.PRIMARIES)
        finally:
            await cluster.aclose()
        return
    client = aioredis.Redis.from_url(url, socket_connect_timeout=5.0, socket_timeout=10.0)
    try:
        with redis_errors("loading the registry's functions"):
            await load_library(client)
    finally:
        await client.aclose()


def _load(url: str | None) -> None:
    if not url:
        raise CommandError("--load needs REDIS_URL: the Redis URL of the admin user", status=2)
    try:
        check_redis_url(url)
    except ValueError as exc:
        raise CommandError(f"REDIS_URL: {exc}", status=2) from None
    try:
        anyio.run(load_functions, url)
    except Unavailable as exc:
        raise CommandError(str(exc)) from None
    print(f"loaded the registry's Redis functions ({LIBRARY})")


def cmd_redis_config(args: argparse.Namespace) -> int:
    """``a2a redis-config``: ``roster``, ``namespace``, ``client`` (list or None), ``out`` (path or None).

    With ``load`` the command loads the registry's function library into the Redis at
    ``REDIS_URL`` instead of printing the ACL file (and still writes it to ``out`` if set).
    """
    roster = Roster.load(args.roster)  # RosterError (a ValueError): reported as bad usage
    if getattr(args, "load", False):
        _load(os.environ.get("REDIS_URL"))
        if not args.out:
            return 0
    try:
        text = render_acl(roster, args.namespace, clients=args.client or CLIENTS)
    except MissingPassword as exc:
        raise CommandError(str(exc), status=2) from None
    if args.out:
        Path(args.out).write_text(text)
    else:
        print(text, end="")
    return 0
