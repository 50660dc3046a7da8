"""``a2a task setup``: make the durable-task stream, bucket and agents' consumers, as the admin.

Under ``a2a nats-config``'s permissions no runtime may make JetStream streams or
consumers, so an operator runs this once per namespace (and again when agents join the
roster) with the admin's credentials::

    NATS_USER=admin NATS_PASSWORD=... a2a task setup --roster roster.yaml --replicas 3

It makes the work-queue stream, the KV bucket, and one pull consumer per roster agent,
with the namespace's settings (``A2A_TASK_ACK_WAIT``, ``A2A_MAX_TASK_TTL``); a stream that
exists is brought to these settings, a bucket that exists is kept as it is.
"""

from __future__ import annotations

import argparse
from typing import Any

import anyio

from .common import CommandError, integer, run_interruptibly, settings_from

__all__ = ["add_setup_parser"]


def add_setup_parser(verbs: Any, parents: list[argparse.ArgumentParser]) -> None:
    v = verbs.add_parser(
        "setup",
        parents=parents,
        help="make the task stream, bucket and one consumer per roster agent (admin)",
    )
    v.add_argument("--roster", help="roster file: one consumer per agent in it")
    v.add_argument(
        "--agent", action="append", default=[], help="also make a consumer for this agent (repeatable)"
    )
    v.add_argument("--replicas", type=integer(1, 5), default=1, help="stream and bucket replicas (default 1)")
    v.add_argument(
        "--memory", action="store_true", help="keep them in memory, not in files (lost on restart)"
    )
    v.add_argument("--nats-url", help="NATS server URL (env NATS_URL)")
    v.add_argument("--namespace", help="deployment namespace (env A2A_NAMESPACE)")
    v.set_defaults(func=cmd_setup)


def cmd_setup(args: argparse.Namespace) -> int:
    from bus.subjects import Subjects
    from transports import TransportError
    from transports.jetstream_setup import provision

    from ..core.connect import connect_nats
    from ..core.durable import store_config
    from ..delegation.roster import Roster

    agents = set(args.agent)
    if args.roster:
        try:
            agents |= set(Roster.load(args.roster).agents)
        except (OSError, ValueError) as exc:
            raise CommandError(f"cannot read the roster: {exc}", status=2) from None
    if not agents:
        raise CommandError("name the agents: --roster FILE or --agent NAME", status=2)
    settings = settings_from(args, client_name="admin")
    subjects = Subjects(settings.namespace, settings.name)
    try:
        consumers = {agent: subjects.receiving().task_queue(agent) for agent in sorted(agents)}
    except ValueError as exc:
        raise CommandError(str(exc), status=2) from None
    config = store_config(settings, subjects, replicas=args.replicas, memory=args.memory)

    async def setup() -> list[str]:
        transport = await connect_nats(settings, name="a2a-task-setup")
        try:
            return await provision(transport, config, consumers)
        finally:
            with anyio.CancelScope(shield=True):
                await transport.aclose()

    try:
        done = run_interruptibly(setup)
    except TransportError as exc:
        raise CommandError(f"the task store could not be set up: {exc}") from None
    for line in done:
        print(line)
    return 0
