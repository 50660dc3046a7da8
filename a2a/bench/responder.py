"""The other process of ``a2a bench``: a raw nats-py echo responder and a runtime echo agent.

All answer in the same process and event loop, so the raw and runtime measurements
share every condition but the code under test: the raw responder, the envelope floor (a
raw nats-py responder that decodes each compact request and answers with a compact
response, nothing else: what any envelope costs before a single check), an echo agent with
the defaults (audit and history capture on), one with the audit off, one with both off, and
one with the audit on and capture off.
"""

from __future__ import annotations

import argparse
import signal
from typing import Any

import anyio
import nats
from nats.aio.msg import Msg

from ..core.agent import Agent
from ..core.context import Context
from ..core.runtime import Runtime
from ..core.settings import Settings
from .floor import envelope_subject, floor_respond

__all__ = ["ECHO_CAPABILITY", "echo_agent", "raw_subject"]

ECHO_CAPABILITY = "bench.echo"


def raw_subject(namespace: str) -> str:
    return f"bench.raw.{namespace}"


def echo_agent(name: str = "bench-echo", *, routed: bool = True) -> Agent:
    """An echo agent; ``routed``: calls by capability may reach it (only the default one's
    are, so that they measure the defaults)."""
    from discovery import AgentCapability

    capabilities = [AgentCapability(id=ECHO_CAPABILITY)] if routed else []
    agent = Agent(name, capabilities=capabilities, max_concurrency=256)

    @agent.action("echo")
    async def echo(ctx: Context, params: dict[str, Any]) -> Any:
        return params

    return agent


async def serve(nats_url: str, redis_url: str, namespace: str) -> None:
    nc = await nats.connect(nats_url)

    async def respond(msg: Msg) -> None:
        await msg.respond(msg.data)

    await nc.subscribe(raw_subject(namespace), cb=respond)
    await nc.subscribe(envelope_subject(namespace), cb=floor_respond)
    settings = Settings(nats_url=nats_url, redis_url=redis_url, namespace=namespace)
    quiet = Settings(nats_url=nats_url, redis_url=redis_url, namespace=namespace, audit=False)
    bare = Settings(
        nats_url=nats_url, redis_url=redis_url, namespace=namespace, audit=False, history_capture=False
    )
    audited = Settings(nats_url=nats_url, redis_url=redis_url, namespace=namespace, history_capture=False)
    async with (
        Runtime(settings) as rt,
        Runtime(quiet) as rt_quiet,
        Runtime(bare) as rt_bare,
        Runtime(audited) as rt_audited,
    ):
        await rt.serve(echo_agent())
        await rt_quiet.serve(echo_agent("bench-echo-unaudited", routed=False))
        await rt_bare.serve(echo_agent("bench-echo-bare", routed=False))
        await rt_audited.serve(echo_agent("bench-echo-audited", routed=False))
        await nc.flush()
        print("ready", flush=True)
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async for _ in signals:
                break
    await nc.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nats-url", required=True)
    parser.add_argument("--redis-url", required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--loop", choices=["asyncio", "uvloop"], default="asyncio")
    args = parser.parse_args()
    options = {"use_uvloop": args.loop == "uvloop"}
    anyio.run(
        serve, args.nats_url, args.redis_url, args.namespace, backend="asyncio", backend_options=options
    )


if __name__ == "__main__":
    main()
