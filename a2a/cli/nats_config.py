"""nats-server users generated from the roster: each publishes only as itself, only where it must.

``a2a nats-config --roster roster.yaml --namespace prod > auth.conf`` writes one NATS
user per roster agent (user name = agent name; password from the environment variable
``A2A_NATS_PASSWORD_<USER>``, which nats-server resolves itself), client users for callers
from outside any agent (:data:`CLIENTS`: the CLI, the HTTP gateway, sessions, the console),
an audit reader for operators, and an admin. What the server then enforces:

* every subject a user publishes requests, notifications and cancels on ends (or, for
  notifications, continues) with its own name: nobody can send as someone else;
* an agent publishes requests only to the agents its roster entry may invoke; any other
  publish is refused, and the runtime turns the refusal into PERMISSION_DENIED at once;
* nobody may publish on reply subjects: only the user that received a request may
  answer it (``allow_responses``: ``bus.protocol.MAX_RESPONSES`` messages, its ack,
  progress updates and the reply, until the call's longest deadline);
* an agent receives only its own requests, cancels and replies, and publishes audit
  records only on its own audit subject; the audit stream is out of agents' reach
  (only the audit reader and the admin manage it, clients and the audit reader read it);
* nobody but the admin creates JetStream streams or consumers: a consumer delivers the
  stream onto whatever subject its creator names, from the server itself, and nats-server
  cannot check that subject against the creator's rights. Readers fetch the stream's
  messages by sequence (``$JS.API.STREAM.MSG.GET``), whose answers wrap a message in the
  API's JSON wherever the request sends them, never as a message of its own;
* durable tasks (``a2a task setup`` makes their stream, bucket and one pull consumer per
  agent, as the admin): a runtime queues tasks only in its own name and only for the
  agents it may invoke, writes and reads its own tasks' records and idempotency keys,
  reads and hears their outcomes and journals, and may cancel them; an agent takes work
  only through its own consumer, acknowledges only its own deliveries, and reads and
  writes outcomes, journals, checkpoints and effects only of tasks queued for it (the keys
  name the agent and the sender: ``bus.durable.keys``).

Two accounts. The server answers a JetStream request on whatever reply subject the
requester names, and a direct get or a pull answers with stored bytes themselves: a user
that may store bytes in a key of its own and read them back could have the server publish
a message of its choosing on any subject. So JetStream lives in an account nobody logs in
to (:data:`STORE_ACCOUNT`), whose API, bucket, queues and audit subjects the users'
account (:data:`ACCOUNT`) imports as services: what the server publishes back lands in the
users' account, never on a subject a stream keeps, and the runtime refuses, on every
subscription of the bus, a message that carries a stream's headers or a JetStream
acknowledgement subject (``transports.NatsTransport``).

The roster's capabilities are pinned here as by ``a2a redis-config``: ``--agents
module:attr`` names the agents' code, whose declared capabilities fill in the roster
entries that list none; an entry with neither is an error.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Iterable
from pathlib import Path

from bus.subjects import JETSTREAM_API, Subjects, jetstream_acks

from ..delegation.roster import Roster
from .common import CommandError, load_agents
from .nats_permissions import Permissions, agent_permissions, auditor_permissions, client_permissions

__all__ = [
    "CLIENTS",
    "agent_permissions",
    "cmd_nats_config",
    "password_variable",
    "pinned_roster",
    "render_authorization",
]

CLIENTS = ("client", "gateway", "session", "console")
"""Users for callers outside any agent: the CLI, the HTTP gateway that serves A2A clients,
the runtimes that run sessions (``a2a session``) and the console (``a2a console``, ``a2a watch``)."""

ACCOUNT = "A2A"
"""The account every generated user logs in to."""
STORE_ACCOUNT = "A2A_STORE"
"""The account that holds JetStream; nobody logs in to it."""


def password_variable(user: str) -> str:
    """Environment variable nats-server reads ``user``'s password from."""
    return "A2A_NATS_PASSWORD_" + re.sub(r"[^A-Za-z0-9]", "_", user).upper()


def store_subjects(namespace: str) -> tuple[list[str], list[str]]:
    """What the store account lets the users' account reach: the services (requests and
    publishes that cross into the store: the JetStream API, acknowledgements, writes to
    the task bucket, the task queues, the audit records) and the streams (the bucket's
    republished writes, heard in the users' account)."""
    subjects = Subjects(namespace).receiving()
    services = [
        JETSTREAM_API,
        jetstream_acks(subjects.task_stream),
        f"$KV.{subjects.task_bucket}.>",
        subjects.task_queues(),
        subjects.audit_all,
    ]
    return services, [f"{subjects.task_updates}.>"]


def render_authorization(
    roster: Roster,
    namespace: str,
    *,
    clients: Iterable[str] = CLIENTS,
    auditor: str | None = "auditor",
    admin: str | None = "admin",
    max_ttl: float = 600.0,
) -> str:
    """The ``accounts { ... }`` block, for ``include`` in a nats-server config.

    ``max_ttl`` is the longest call (seconds) agents accept (``A2A_MAX_TTL``): an agent may
    answer a request that long after receiving it.
    """
    users: list[tuple[str, Permissions]] = []
    for agent in sorted(roster.agents):
        users.append((agent, agent_permissions(roster, agent, namespace, max_ttl=max_ttl)))
    for client in clients:
        users.append((client, client_permissions(namespace, client)))
    if auditor:
        users.append((auditor, auditor_permissions(namespace, auditor)))
    services, streams = store_subjects(namespace)
    lines = [
        f"# Generated by `a2a nats-config` for namespace {namespace!r}. Passwords come from the",
        "# environment variables named below; nats-server resolves $NAME from its environment.",
        "accounts {",
        "  # JetStream: the audit stream and the durable tasks' queue and bucket. No user logs",
        f"  # in here; what {ACCOUNT}'s users may reach of it crosses as services and streams.",
        f"  {STORE_ACCOUNT}: {{",
        "    jetstream: enabled",
        "    exports: [",
        *(f"      {{service: {json.dumps(s)}, response_type: {_response_type(s)}}}" for s in services),
        *(f"      {{stream: {json.dumps(s)}}}" for s in streams),
        "    ]",
        "  }",
        f"  {ACCOUNT}: {{",
        "    users: [",
    ]
    for user, permissions in users:
        lines.append(
            f"      {{user: {json.dumps(user)}, password: ${password_variable(user)}, permissions: {{"
        )
        for direction in ("publish", "subscribe"):
            rules: dict[str, list[str]] = permissions[direction]  # type: ignore[assignment]
            parts = [
                f"{kind}: [{', '.join(json.dumps(s) for s in rules[kind])}]"
                for kind in ("allow", "deny")
                if kind in rules
            ]
            lines.append(f"        {direction}: {{{', '.join(parts)}}}")
        responses = permissions.get("allow_responses")
        if isinstance(responses, dict):
            expires = json.dumps(responses["expires"])
            lines.append(f"        allow_responses: {{max: {responses['max']}, expires: {expires}}}")
        lines.append("      }}")
    if admin:
        lines.append(f"      {{user: {json.dumps(admin)}, password: ${password_variable(admin)}}}")
    lines += [
        "    ]",
        "    imports: [",
        *(f"      {{service: {{account: {STORE_ACCOUNT}, subject: {json.dumps(s)}}}}}" for s in services),
        *(f"      {{stream: {{account: {STORE_ACCOUNT}, subject: {json.dumps(s)}}}}}" for s in streams),
        "    ]",
        "  }",
        "}",
        "",
    ]
    return "\n".join(lines)


def _response_type(service: str) -> str:
    """A pull request is answered with a stream of messages (a batch); the rest with one."""
    return "stream" if service == JETSTREAM_API else "singleton"


def pinned_roster(args: argparse.Namespace) -> Roster:
    """The roster of ``args.roster`` with the capabilities of the agents in ``args.agents``
    (``module:attr`` targets) filling in the entries that list none.

    Raises:
        RosterError: the roster is unreadable or inconsistent.
        CommandError: an agent target does not load, or a roster agent has no capabilities.
    """
    roster = Roster.load(args.roster)  # RosterError (a ValueError): reported as bad usage
    declared: dict[str, list[str]] = {}
    for agent in load_agents(getattr(args, "agents", None) or []):
        declared.setdefault(agent.name, []).extend(c.id for c in agent.capabilities)
    roster = roster.pinned(declared)
    missing = roster.unpinned()
    if missing:
        names = ", ".join(missing)
        raise CommandError(
            f"roster agent{'s' if len(missing) > 1 else ''} {names} list{'' if len(missing) > 1 else 's'} "
            "no capabilities: list what each may advertise in the roster (capabilities: [id, ...]) "
            "or name its code with --agents module:attr",
            status=2,
        )
    return roster


def cmd_nats_config(args: argparse.Namespace) -> int:
    """``a2a nats-config``: ``roster``, ``agents``, ``namespace``, ``client``, ``max_ttl``, ``out``."""
    roster = pinned_roster(args)
    text = render_authorization(roster, args.namespace, clients=args.client or CLIENTS, max_ttl=args.max_ttl)
    if args.out:
        Path(args.out).write_text(text)
    else:
        print(text, end="")
    return 0
