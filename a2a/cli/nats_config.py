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
* durable tasks get no rights here: their store is read by direct get, and the server
  answers a JetStream request on whatever reply subject the requester names, bytes the
  requester stored included, so with a right to read its own keys a user could have the
  server publish a message of its choosing on any subject (a request in another's name, a
  write to another's key). The task store needs an account of its own, whose subjects
  users import as services; until then durable tasks run only without these permissions.

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

from bus.protocol import MAX_RESPONSES
from bus.subjects import Subjects, inbox_prefix, jetstream_api

from ..delegation.roster import Roster
from .common import CommandError, load_agents

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

Permissions = dict[str, object]


def password_variable(user: str) -> str:
    """Environment variable nats-server reads ``user``'s password from."""
    return "A2A_NATS_PASSWORD_" + re.sub(r"[^A-Za-z0-9]", "_", user).upper()


def _caller(subjects: Subjects, targets: Iterable[str]) -> list[str]:
    """Publish rights of a runtime calling ``targets`` (``*`` for any agent), in its own name."""
    me = subjects.sender
    allow = [
        subjects.notifications(),
        subjects.audit(me),
        jetstream_api("STREAM.INFO", subjects.audit_stream),
    ]
    for target in targets:
        if target == "*":
            allow += subjects.calls_to_anyone()
        else:
            allow += [subjects.agent(target), subjects.instances(target), subjects.cancel(target)]
    return allow


def _own(subjects: Subjects) -> list[str]:
    """What a user receives in any role: replies to its calls, its own request inboxes."""
    return [subjects.replies(), f"{inbox_prefix(subjects.sender)}.>"]


def _responses(max_ttl: float) -> dict[str, object]:
    return {"max": MAX_RESPONSES, "expires": f"{int(max_ttl) + 60}s"}


def agent_permissions(roster: Roster, agent: str, namespace: str, *, max_ttl: float = 600.0) -> Permissions:
    """Publish and subscribe rights of one agent's NATS user.

    An agent may answer whatever reaches it (``allow_responses``), so nothing it sends
    itself may reach it: otherwise it could give itself a message with any reply subject,
    and with it the right to publish there. The subscriptions that would receive its own
    requests, cancels and notifications are denied.
    """
    me = Subjects(namespace, agent)
    anyone = me.receiving()
    rules = roster.rules(agent)
    targets = rules.can_invoke if rules.allow_sub_agent_calls else ()
    subscribe = [
        *_own(me),
        anyone.agent(agent),
        anyone.instances(agent),
        anyone.cancel(agent),
        f"{anyone.notifications()} {agent}",  # only in its own queue group
    ]
    deny = [me.agent(agent), me.instances(agent), me.cancel(agent), me.notifications()]
    return {
        "publish": {"allow": _caller(me, targets)},
        "subscribe": {"allow": subscribe, "deny": deny},
        "allow_responses": _responses(max_ttl),
    }


def _client_permissions(namespace: str, user: str) -> Permissions:
    """A caller from outside any agent: calls any agent in its own name, reads the audit records."""
    me = Subjects(namespace, user)
    publish = [*_caller(me, ["*"]), *_audit_reading(me.audit_stream)]
    return {"publish": {"allow": publish}, "subscribe": {"allow": [*_own(me), me.audit_all]}}


def _auditor_permissions(namespace: str, user: str) -> Permissions:
    """The operators' audit reader: creates and reads the audit stream; calls nobody."""
    me = Subjects(namespace, user)
    stream = me.audit_stream
    publish = [
        jetstream_api("STREAM.CREATE", stream),
        jetstream_api("STREAM.UPDATE", stream),
        jetstream_api("STREAM.INFO", stream),
        *_audit_reading(stream),
    ]
    return {"publish": {"allow": publish}, "subscribe": {"allow": [*_own(me), me.audit_all]}}


def _audit_reading(stream: str) -> list[str]:
    """Reading the audit stream message by message: no consumer, so nothing delivered elsewhere."""
    return [jetstream_api("STREAM.MSG.GET", stream)]


def render_authorization(
    roster: Roster,
    namespace: str,
    *,
    clients: Iterable[str] = CLIENTS,
    auditor: str | None = "auditor",
    admin: str | None = "admin",
    max_ttl: float = 600.0,
) -> str:
    """The ``authorization { users = [...] }`` block, for ``include`` in a nats-server config.

    ``max_ttl`` is the longest call (seconds) agents accept (``A2A_MAX_TTL``): an agent may
    answer a request that long after receiving it.
    """
    users: list[tuple[str, Permissions]] = []
    for agent in sorted(roster.agents):
        users.append((agent, agent_permissions(roster, agent, namespace, max_ttl=max_ttl)))
    for client in clients:
        users.append((client, _client_permissions(namespace, client)))
    if auditor:
        users.append((auditor, _auditor_permissions(namespace, auditor)))
    lines = [
        f"# Generated by `a2a nats-config` for namespace {namespace!r}. Passwords come from the",
        "# environment variables named below; nats-server resolves $NAME from its environment.",
        "authorization {",
        "  users = [",
    ]
    for user, permissions in users:
        lines.append(f"    {{user: {json.dumps(user)}, password: ${password_variable(user)}, permissions: {{")
        for direction in ("publish", "subscribe"):
            rules: dict[str, list[str]] = permissions[direction]  # type: ignore[assignment]
            parts = [
                f"{kind}: [{', '.join(json.dumps(s) for s in rules[kind])}]"
                for kind in ("allow", "deny")
                if kind in rules
            ]
            lines.append(f"      {direction}: {{{', '.join(parts)}}}")
        responses = permissions.get("allow_responses")
        if isinstance(responses, dict):
            expires = json.dumps(responses["expires"])
            lines.append(f"      allow_responses: {{max: {responses['max']}, expires: {expires}}}")
        lines.append("    }}")
    if admin:
        lines.append(f"    {{user: {json.dumps(admin)}, password: ${password_variable(admin)}}}")
    lines += ["  ]", "}", ""]
    return "\n".join(lines)


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
