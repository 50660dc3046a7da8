"""``a2a attach URL``: serve a remote A2A agent on the bus until Ctrl-C."""

from __future__ import annotations

import argparse
import logging
import math
import re
import signal
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from .common import CommandError, settings_from

if TYPE_CHECKING:
    from ..core.settings import Settings

__all__ = ["add_attach_parser", "cmd_attach", "parse_headers"]

_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$")
_MAX_HEADER_VALUE = 8192


def _trust(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise argparse.ArgumentTypeError(f"trust must be between 0 and 1, got {text}")
    return value


def parse_headers(values: Sequence[str]) -> dict[str, str]:
    """``'Name: value'`` strings as headers; CommandError (status 2) for a malformed one."""
    headers: dict[str, str] = {}
    for raw in values:
        name, sep, value = raw.partition(":")
        name, value = name.strip(), value.strip()
        if not sep or not _HEADER_NAME.match(name):
            raise CommandError(f"--header takes 'Name: value', got {raw[:80]!r}", status=2)
        if any(c in value for c in "\r\n\0") or len(value) > _MAX_HEADER_VALUE:
            raise CommandError(f"--header {name}: the value must be one line of at most 8 KiB", status=2)
        headers[name] = value
    return headers


def add_attach_parser(
    sub: Any,
    parents: Sequence[argparse.ArgumentParser],
    connection_options: object,
) -> None:
    p = sub.add_parser(
        "attach",
        parents=list(parents),
        help="serve a remote A2A agent (HTTP, A2A 1.0 or 0.3) on the bus until stopped",
    )
    p.add_argument("url", help="the agent's base URL, or its agent card's URL")
    p.add_argument("--name", help="agent name on the bus (default: from the card's name)")
    p.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="HTTP header sent to the remote agent, e.g. 'Authorization: Bearer ...' (repeatable)",
    )
    p.add_argument(
        "--trust", type=_trust, default=0.5, help="trust in the agent before any call, 0-1 (default 0.5)"
    )
    p.add_argument("--card-key", type=Path, help="PEM public key trusted to sign the agent's card")
    p.add_argument(
        "--any-origin",
        action="store_true",
        help="let the card name an endpoint on another host (the --header values go there too)",
    )
    p.add_argument(
        "--follow-redirects",
        action="store_true",
        help="follow redirects of the card fetch (with --header, to another host only with --any-origin)",
    )
    assert callable(connection_options)
    connection_options(p)
    p.set_defaults(func=cmd_attach)


class _Shutdown:
    """A signal while connecting cancels at once; once attached, it ends the wait so the
    instance deregisters on the way out of the runtime."""

    def __init__(self) -> None:
        self.requested = anyio.Event()
        self.serving = False

    async def watch(self, signals: AsyncIterator[int], startup: anyio.CancelScope) -> None:
        async for _ in signals:
            self.requested.set()
            if not self.serving:
                startup.cancel()
            return


async def _attach(
    settings: Settings, args: argparse.Namespace, headers: dict[str, str], keys: list[Any]
) -> bool:
    from ..core.runtime import Runtime
    from ..external import NoUsableInterface, remote_agent

    shutdown = _Shutdown()
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with anyio.create_task_group() as tg:
            tg.start_soon(shutdown.watch, signals, tg.cancel_scope)
            try:
                remote = await remote_agent(
                    args.url,
                    name=args.name,
                    headers=headers,
                    base_trust=args.trust,
                    card_keys=keys,
                    any_origin=args.any_origin,
                    follow_redirects=args.follow_redirects,
                )
            except NoUsableInterface as exc:
                raise CommandError(str(exc)) from None
            async with Runtime(settings) as rt:
                shutdown.serving = True
                (host,) = await rt.serve(remote.agent)
                external = remote.agent.metadata["external"]
                print(
                    f"attached {remote.card.name!r} as {host.agent.name} ({host.instance_id}): "
                    f"{external['binding']} {external['protocolVersion']} at {external['url']}, "
                    f"card {external['signature']}; Ctrl-C stops",
                    flush=True,
                )
                logging.getLogger("a2a").info("actions: %s", ", ".join(sorted(host.agent.actions)))
                await shutdown.requested.wait()
            tg.cancel_scope.cancel()
    return shutdown.serving


def cmd_attach(args: argparse.Namespace) -> int:
    from ..external import load_card_key

    headers = parse_headers(args.header)
    keys = [load_card_key(args.card_key)] if args.card_key else []  # ValueError: exit 2
    settings = settings_from(args)
    served = anyio.run(_attach, settings, args, headers, keys)
    return 0 if served else 130
