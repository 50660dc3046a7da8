"""Redis ACL users generated from the roster: each user reads and writes only the data it serves.

``a2a redis-config --roster roster.yaml --namespace prod --out users.acl`` writes an ACL
file for ``redis-server --aclfile users.acl``: one Redis user per roster agent (user name =
agent name), users for the runtimes outside any agent (``client`` for the CLI, ``gateway``
for the A2A gateway, ``session`` for ``a2a session``, ``console`` for the console and
``a2a watch``) and an admin. Passwords are read at generation time from the environment
variables ``A2A_REDIS_PASSWORD_<USER>`` and written as SHA-256 hashes (an ACL file cannot
read the environment); runtimes connect with ``REDIS_URL=redis://<user>:<password>@host:6379/0``.
ACL files have no comments, so the file says nothing of where it came from.

What the server then enforces, for every command and for every key a function touches.
Rights go by key family (``P`` = ``a2a:{<ns>}:``):

* registry (``P inst:*``, ``P insts:*``, ``P cap:*``, ``P instances``, ``capsof``,
  ``expiry``, ``sweeper``, ``grants``; channels ``P events``, ``P events:*``): every user reads it; an agent
  writes its own instance hashes and set of live instances and the shared indexes; only
  the admin writes ``grants``;
* history (``P conv:*``, ``P active:*``): read and written by every user (shared);
* gateway tasks (``P task:*``, ``P task-log:*``, ``P tasks:*``, ``P gw:*``; channels ``P task-events:*``,
  ``P gw-cancel``) and their push notifications (``P push:*``, ``P pushes:*``, ``P push-due``,
  ``P push-lease:*``): the ``gateway`` user only;
* sessions (``P session:*``, ``P sessions:*``, ``P session-policy:*``, ``-rate:*``,
  ``-calls:*``, ``-audit:*``; channel ``P session-events``): the ``session`` and
  ``console`` users only.

Besides:

* the ``default`` user is off: no unauthenticated access;
* an agent writes its own instance hashes only (the instance ids the runtime makes, so an
  agent whose name is another's plus ``-suffix`` cannot match them) and its own set of live
  instances, which the registry's functions keep to count them against its roster entry;
* neither agents nor plain clients may read a user's tasks, task lists or sessions;
* a user may send only the commands its runtime sends, and may not run code of its own: no
  EVAL, EVALSHA, SCRIPT or FUNCTION LOAD/DELETE/FLUSH/RESTORE (a script that never ends
  would stall Redis for everyone), only FCALL / FCALL_RO of the registry's library, which
  the admin loads; clients call only the functions that read (FCALL_RO). The ``session``
  and ``console`` users alone may EVAL, for the session lease and the shared-call
  admission, which are scripts;
* nor anything else: no FLUSHALL, KEYS, SCAN, CONFIG, DEBUG, ACL, SHUTDOWN, MONITOR,
  MODULE, REPLICAOF, ... Only the admin has every right.

``--load`` (with ``REDIS_URL`` naming the admin) loads the registry's function library and
writes the roster's grants (``P grants``: what each agent may advertise, and how many
instances it may run), replacing the whole hash at once. The capabilities are pinned here:
``--agents module:attr`` names the agents' code, whose declared capabilities fill in the
roster entries that list none (an entry with neither is an error).

Views refuse an entry whose profile names another agent than its id's prefix, so the key
rights above decide which agent an instance may claim to be.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from bus.subjects import validate_name
from discovery.registry import RegistryKeys

from ..delegation.roster import Roster
from .common import CommandError
from .nats_config import CLIENTS, pinned_roster
from .redis_load import grants, load, load_functions, load_grants

__all__ = [
    "AGENT_COMMANDS",
    "CLIENT_COMMANDS",
    "GATEWAY_COMMANDS",
    "SESSION_COMMANDS",
    "MissingPassword",
    "agent_rules",
    "client_rules",
    "cmd_redis_config",
    "gateway_rules",
    "grants",
    "load_functions",
    "load_grants",
    "password_variable",
    "render_acl",
    "session_rules",
]

_CONNECTION = ("ping", "select")
_READ_FUNCTIONS = ("fcall_ro",)
"""The registry's reads run as FCALL_RO: Redis refuses writes from them, and read-only
key rights (``%R~``) let clients run them."""
_REGISTRY_READS = (
    "hget",
    "hmget",
    "hstrlen",
    "hlen",
    "hgetall",
    "sscan",
    "zrevrange",
    "zscore",
    "exists",
    "pttl",
    "time",
)
"""What the registry's functions send on the caller's behalf (Redis checks the caller's
rights for each command a function runs, as for each key), and views' reads of the grants."""
_REGISTRY_WRITES = (
    "hset",
    "hdel",
    "del",
    "pexpire",
    "sadd",
    "srem",
    "zadd",
    "zrem",
    "zcount",
)
"""Registrations also prune and count the agent's own instance set (ZRANGEBYSCORE, ZREM, ZCOUNT)."""
_SWEEPER = ("zrange", "zrangebyscore", "get", "set")
"""The sweeper (any agent's runtime, one at a time) reads the expiry set and holds its lease."""
_HISTORY = (
    "hsetnx",
    "hincrby",  # a conversation's count of exchanges written
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
_FOLLOW = ("subscribe", "unsubscribe")

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
            *_FOLLOW,
        )
    )
)
"""Everything an agent's runtime sends, directly or from the registry's functions."""
CLIENT_COMMANDS = tuple(
    dict.fromkeys((*_CONNECTION, *_READ_FUNCTIONS, *_REGISTRY_READS, *_HISTORY, *_FOLLOW))
)
"""A runtime that hosts no agent: it follows the registry and keeps history, never registers."""
GATEWAY_USER = "gateway"
_TASKS = (
    *("set", "get", "mget", "zadd", "zcard", "zrevrange", "zremrangebyscore", "pexpire", "exists", "del"),
    *("rpush", "lrange", "ltrim"),  # the log of a task's stream events
    *("hset", "hdel", "hkeys", "hmget", "hgetall", "zrem", "zrange", "zrangebyscore"),  # push notifications
)
GATEWAY_COMMANDS = tuple(dict.fromkeys((*CLIENT_COMMANDS, *_TASKS, "publish")))
"""A client that also keeps A2A tasks (``a2a.gateway.tasks``) and shares them with its replicas."""
SESSION_USERS = ("session", "console")
_SESSIONS = (
    *("set", "get", "exists", "expire", "publish"),
    *("watch", "unwatch", "multi", "exec", "discard"),  # compare-and-set of a session
    *("zadd", "zrevrange", "zrem"),  # a user's sessions, shared calls in flight
    *("rpush", "ltrim", "lrange"),  # the audit of a local agent
    "eval",  # the owner's lease and the shared-call admission (``a2a.sessions``) are scripts,
    *("pexpire", "del", "zremrangebyscore", "zcard", "incr"),  # which send these
)
SESSION_COMMANDS = tuple(dict.fromkeys((*CLIENT_COMMANDS, *_SESSIONS)))
"""A client that also runs sessions (``a2a.sessions``): ``a2a session``, the console, ``a2a watch``."""

INSTANCE_SUFFIX = "[0-9a-f]" * 8
"""Glob of the 8 hex digits that end the instance ids the runtime makes (``reader-1a2b3c4d``)."""


class MissingPassword(ValueError):
    """A user's password variable is not set."""


def password_variable(user: str) -> str:
    """Environment variable holding ``user``'s password when the ACL file is generated."""
    return "A2A_REDIS_PASSWORD_" + re.sub(r"[^A-Za-z0-9]", "_", user).upper()


def _commands(commands: Iterable[str]) -> list[str]:
    return ["-@all", *(f"+{c}" for c in commands)]


def _registry_reads(keys: RegistryKeys) -> list[str]:
    """Read-only rights on the registry's keys (writes, where granted, come on top)."""
    p = keys.prefix
    shared = (keys.instances, keys.capsof, keys.expiry, keys.sweeper, keys.grants)
    return [*(f"%R~{p}{family}:*" for family in ("inst", "insts", "cap")), *(f"%R~{k}" for k in shared)]


def _history(keys: RegistryKeys) -> list[str]:
    return [f"~{keys.prefix}conv:*", f"~{keys.prefix}active:*"]


def agent_rules(agent: str, namespace: str) -> list[str]:
    """ACL rules (after the password) of one agent's user."""
    keys = RegistryKeys(namespace)
    name = validate_name("agent name", agent)
    return [
        *_commands(AGENT_COMMANDS),
        *_registry_reads(keys),
        f"~{keys.instance(name)}-{INSTANCE_SUFFIX}",
        f"~{keys.agent_instances(name)}",
        f"~{keys.instances}",
        f"~{keys.capsof}",
        f"~{keys.expiry}",
        f"~{keys.sweeper}",
        f"~{keys.prefix}cap:*",
        *_history(keys),
        f"&{keys.events}",
        f"&{keys.events}:*",
    ]


def _follower(keys: RegistryKeys) -> list[str]:
    """Key and channel rights of every runtime that hosts no agent: it follows the registry."""
    return [*_registry_reads(keys), *_history(keys), f"&{keys.events}", f"&{keys.events}:*"]


def client_rules(namespace: str) -> list[str]:
    """ACL rules (after the password) of a client user."""
    return [*_commands(CLIENT_COMMANDS), *_follower(RegistryKeys(namespace))]


def gateway_rules(namespace: str) -> list[str]:
    """ACL rules of the A2A gateway: a client's, plus its tasks, replica keys and task channels."""
    keys = RegistryKeys(namespace)
    p = keys.prefix
    tasks = [
        f"~{p}task:*",
        f"~{p}task-log:*",
        f"~{p}tasks:*",
        f"~{p}gw:*",
        f"~{p}push:*",
        f"~{p}pushes:*",
        f"~{p}push-due",
        f"~{p}push-lease:*",
        f"&{p}task-events:*",
        f"&{p}gw-cancel",
    ]
    return [*_commands(GATEWAY_COMMANDS), *_follower(keys), *tasks]


def session_rules(namespace: str) -> list[str]:
    """ACL rules of the users that run sessions: a client's, plus the sessions' keys and channel."""
    keys = RegistryKeys(namespace)
    families = ("session", "sessions", "session-policy", "session-rate", "session-calls", "session-audit")
    sessions = [*(f"~{keys.prefix}{family}:*" for family in families), f"&{keys.prefix}session-events"]
    return [*_commands(SESSION_COMMANDS), *_follower(keys), *sessions]


def _password(user: str, passwords: Mapping[str, str]) -> str:
    variable = password_variable(user)
    password = passwords.get(variable)
    if not password:
        raise MissingPassword(f"set {variable} to the Redis password of user {user!r}")
    return "#" + hashlib.sha256(password.encode()).hexdigest()


def _client(user: str, namespace: str) -> list[str]:
    if user == GATEWAY_USER:
        return gateway_rules(namespace)
    if user in SESSION_USERS:
        return session_rules(namespace)
    return client_rules(namespace)


def render_acl(
    roster: Roster,
    namespace: str,
    *,
    clients: Iterable[str] = CLIENTS,
    admin: str | None = "admin",
    passwords: Mapping[str, str] | None = None,
) -> str:
    """The ACL file: ``default`` off, then agents (sorted), clients and the admin.

    ``clients`` named ``gateway`` get the gateway's rights, ``session`` and ``console`` the
    sessions', any other a plain client's. ``passwords`` maps variable names
    (:func:`password_variable`) to passwords; by default the process environment.

    Raises:
        MissingPassword: a user's variable is unset or empty.
    """
    env = os.environ if passwords is None else passwords
    users = [(agent, agent_rules(agent, namespace)) for agent in sorted(roster.agents)]
    users += [(validate_name("client user", c), _client(c, namespace)) for c in clients]
    if admin:
        users.append((validate_name("admin user", admin), ["~*", "&*", "+@all"]))
    lines = ["user default reset off"]
    for user, rules in users:
        lines.append(" ".join(["user", user, "reset", "on", _password(user, env), *rules]))
    return "\n".join(lines) + "\n"


def cmd_redis_config(args: argparse.Namespace) -> int:
    """``a2a redis-config``: ``roster``, ``agents`` (targets or None), ``namespace``, ``client``
    (list or None), ``out`` (path or None).

    With ``load`` the command loads the registry's function library and the roster's
    grants into the Redis at ``REDIS_URL`` instead of printing the ACL file (and still
    writes it to ``out`` if set).
    """
    roster = pinned_roster(args)
    if getattr(args, "load", False):
        load(os.environ.get("REDIS_URL"), args.namespace, roster)
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
