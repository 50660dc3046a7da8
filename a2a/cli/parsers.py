"""The arguments of ``a2a up``, ``agents``, ``call`` and ``history``; their commands are imported when run."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any

from .common import capability_id, integer, lazy, port, seconds

__all__ = ["add_call_parser", "add_history_parser", "add_up_parser", "conversation_id"]

Options = Callable[[argparse.ArgumentParser], None]
_MAX_ID = 256


def conversation_id(text: str) -> str:
    """A conversation id: 1-256 characters, none of them a space or a control character."""
    if not 1 <= len(text) <= _MAX_ID or any(c.isspace() or not c.isprintable() for c in text):
        raise argparse.ArgumentTypeError(
            f"a conversation id has 1-{_MAX_ID} characters, no spaces or control characters: {text[:40]!r}"
        )
    return text


def add_up_parser(sub: Any, parents: Sequence[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "up",
        parents=parents,
        help="run an embedded dev cluster: nats-server (JetStream) and Redis/Valkey",
        description="Start nats-server and a Redis-compatible server on free ports and write their URLs"
        " to the dev cluster file ($A2A_DEV_FILE, else $XDG_CONFIG_HOME/a2a/dev.env, else"
        " ~/.config/a2a/dev.env), which every other a2a command (and Settings.from_env()) reads when"
        " neither the environment nor an option names a NATS server. Ctrl-C stops the servers and"
        " removes the file.",
    )
    p.add_argument("--nats-port", type=port, help="port for nats-server (default: a free port)")
    p.add_argument("--redis-port", type=port, help="port for the Redis server (default: a free port)")
    p.set_defaults(func=lazy("up", "cmd_up"))


def add_call_parser(sub: Any, parents: Sequence[argparse.ArgumentParser], connection: Options) -> None:
    """``a2a agents`` and ``a2a call``."""
    p = sub.add_parser(
        "agents", parents=parents, help="list the registry: instances, capabilities, status, load, trust"
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="a JSON array: each instance with its capabilities, status, load, trust and actions"
        " (with each action's description and input schema, where it declares them)",
    )
    connection(p)
    p.set_defaults(func=lazy("agents", "cmd_agents"))

    p = sub.add_parser(
        "call",
        parents=parents,
        help="call an agent and print the result or the typed error",
        description="Call an agent and print its result (JSON) on standard output. Standard error shows"
        " each progress update as it arrives, then who answered, in how long, and the call's conversation"
        " and request ids (on a terminal, the ids also as the call starts: follow it with 'a2a watch"
        " --conversation ID'). A failed call prints its typed error in one line (CODE: message, with the"
        " ids once the call was sent) and exits 1.",
    )
    p.add_argument("args", nargs="+", metavar="AGENT ACTION | ACTION")
    p.add_argument(
        "--capability",
        action="append",
        type=capability_id,
        help="route by capability instead of agent name (repeatable)",
    )
    p.add_argument("--params", help="parameters as a JSON object")
    p.add_argument("--timeout", type=seconds, help="seconds (default A2A_TIMEOUT or 30)")
    p.add_argument("--user", help="userId carried down the call chain")
    p.add_argument(
        "--conversation",
        type=conversation_id,
        help="the conversation the call joins (default: a new one; its id is printed)",
    )
    p.add_argument(
        "--budget",
        type=integer(0, 2**63 - 1),
        help="tokens the call and everything it delegates may use (BUDGET_EXCEEDED past it)",
    )
    p.add_argument(
        "--max-hops",
        type=integer(1, 1_000_000),
        help="lower the hop limit of the whole call tree (default A2A_MAX_HOPS)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print the whole response envelope as JSON (ids, hop, usage, result) instead of the result",
    )
    p.add_argument(
        "-q", "--quiet", action="store_true", help="print only the result: no ids, no progress updates"
    )
    connection(p)
    p.set_defaults(func=lazy("call", "cmd_call"))


def add_history_parser(sub: Any, parents: Sequence[argparse.ArgumentParser], connection: Options) -> None:
    p = sub.add_parser(
        "history",
        parents=parents,
        help="recent conversations, or one conversation's summary, messages and sub-agent interactions",
        description="Without a conversation id: the conversations of the history store, the most"
        " recently active first. With one: its owner, summary, messages and sub-agent interactions.",
    )
    p.add_argument("conversation", nargs="?", help="conversation (or thread) id; leave out to list them")
    p.add_argument(
        "--messages", type=integer(0, 1000), default=20, help="the last N messages to show (default 20)"
    )
    p.add_argument(
        "--limit",
        type=integer(1, 10_000),
        default=20,
        help="without a conversation id: list the N most recently active (default 20)",
    )
    connection(p)
    p.set_defaults(func=lazy("history", "cmd_history"))
