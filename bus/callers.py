"""The callee's watch over the runtimes that call it: the calls of a runtime that is gone stop.

A calling runtime probes the instances holding its calls (``bus/protocol.py``), and each
probe tells the callee that runtime is alive. When a runtime with calls held here has not
been heard from for CALLER_QUIET seconds, the callee checks it with ``A2A-Probe: caller``
on the reply subject of one of those calls: "no responders" means the runtime's reply
subscription is gone (its process died, or lost its connection). Only when a second check
CALLER_RECHECK seconds later gets "no responders" too, with nothing heard from the runtime
in between, does every call held for it here stop with CANCELLED (reason CALLER_GONE): a
runtime that reconnects within that time keeps its calls. A handler stopped so withdraws
the calls it made in turn, so the withdrawal runs down a chain of relays.

Nothing is checked while this process's own connection is down, a check that could not be
published or was answered while settling after a reconnect has no verdict, and after a
reconnect every runtime counts as just heard from. A runtime none of whose calls here can
carry a check (under generated permissions, no room left on their reply subjects) is kept.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

import anyio
from anyio.abc import TaskGroup

from .callee import Endpoint
from .caller import Caller, Verdict
from .held import Held
from .protocol import CALLER_QUIET, CALLER_RECHECK, PROBE_CALLER, PROBE_EVERY, PROBE_HEADER

__all__ = ["Callers"]

log = logging.getLogger("a2a.bus")

Endpoints = Callable[[], Iterable[Endpoint]]

ROUND = PROBE_EVERY / 2
"""How often quiet runtimes are looked for (a quiet one is checked at most this late)."""


class Callers:
    """When each calling runtime was last heard from, and the checks of the quiet ones.

    Args:
        caller: this process's caller half, which publishes the checks and hears the
            server's "no responders".
        own_prefix: this runtime's reply prefix (its own calls end with it).
        strict: the server enforces generated permissions, under which a callee may
            publish MAX_RESPONSES messages on a call's reply subject.
    """

    def __init__(self, caller: Caller, own_prefix: str, *, strict: bool) -> None:
        self._caller = caller
        self._own = own_prefix
        self._strict = strict
        self._runtime_prefix = caller.link.subjects.runtime_prefix
        self._heard: dict[str, float] = {}
        """Reply prefix of a calling runtime -> when it was last heard from (loop clock)."""
        self._since = 0.0
        """The connection came back then: nobody could be heard from before."""
        self._checking: set[str] = set()
        self.checks = 0
        """Runtimes checked with ``A2A-Probe: caller``."""
        self.withdrawn = 0
        """Calls stopped because the runtime that made them was gone."""

    def heard(self, reply: str) -> None:
        """A probe (or a call sent again) came with the reply subject ``reply``: its runtime is alive."""
        prefix = self._runtime_prefix(reply)
        if prefix is not None:
            self._heard[prefix] = anyio.current_time()

    def reconnected(self) -> None:
        """This process's connection came back: what callers sent meanwhile never arrived."""
        self._since = anyio.current_time()

    async def run(self, endpoints: Endpoints) -> None:
        """Check quiet runtimes every ROUND seconds, until cancelled."""
        transport = self._caller.link.transport
        async with anyio.create_task_group() as tg:
            while True:
                await anyio.sleep(ROUND)
                if transport.is_connected:  # nobody can be heard from meanwhile
                    self.round(tg, endpoints, anyio.current_time())

    def round(self, tg: TaskGroup, endpoints: Endpoints, now: float) -> None:
        """Start, in ``tg``, a check of each runtime with calls held here and quiet for too long."""
        calling: set[str] = set()
        quiet: set[str] = set()
        heard = self._heard
        since = self._since
        for endpoint in endpoints():
            for held in endpoint.held.values():
                if held.released or held.reason is not None:
                    continue
                prefix = self._runtime_prefix(held.reply)
                if prefix is None or prefix == self._own:
                    continue  # a plain NATS requester, or this very process
                calling.add(prefix)
                if now - max(held.started, heard.get(prefix, 0.0), since) >= CALLER_QUIET:
                    quiet.add(prefix)
        for prefix in [p for p in heard if p not in calling]:
            del heard[prefix]  # nothing held for it: forget it (probes keep this map small)
        for prefix in quiet - self._checking:
            self._checking.add(prefix)
            tg.start_soon(self._check, prefix, endpoints)

    async def _check(self, prefix: str, endpoints: Endpoints) -> None:
        try:
            asked = anyio.current_time()
            if await self._ask(prefix, endpoints) != "nobody":
                self._heard[prefix] = anyio.current_time()
                return
            await anyio.sleep(CALLER_RECHECK)  # it may only be reconnecting
            if self._heard_since(prefix, asked):
                return
            asked = anyio.current_time()
            if await self._ask(prefix, endpoints) != "nobody":
                self._heard[prefix] = anyio.current_time()
                return
            if self._heard_since(prefix, asked):
                return
            stopped = sum(endpoint.stop_runtime(prefix) for endpoint in list(endpoints()))
            self._heard.pop(prefix, None)
            self.withdrawn += stopped
            log.warning(
                "stopped %d calls of the runtime %s: nobody receives its replies any more",
                stopped,
                prefix.rstrip("."),
            )
        finally:
            self._checking.discard(prefix)

    def _heard_since(self, prefix: str, asked: float) -> bool:
        """Heard from ``prefix`` (or reconnected) after ``asked``: no verdict on it."""
        return self._heard.get(prefix, 0.0) > asked or self._since > asked

    async def _ask(self, prefix: str, endpoints: Endpoints) -> Verdict | None:
        """Publish a check on a call of ``prefix`` that has room for it; None when none has."""
        carrier = self._carrier(prefix, endpoints)
        if carrier is None:
            # Silence alone proves nothing: keep the calls (their deadlines still apply).
            log.debug("runtime %s is quiet, and none of its calls can carry a check", prefix.rstrip("."))
            return None
        self.checks += 1
        carrier.sent += 1
        return await self._caller.probe(carrier.reply, {PROBE_HEADER: PROBE_CALLER}, timeout=PROBE_EVERY)

    def _carrier(self, prefix: str, endpoints: Endpoints) -> Held | None:
        """A call held for ``prefix`` on whose reply subject a check fits: under generated
        permissions, with room left for the call's first ack (if not sent yet) and its reply."""
        strict = self._strict
        for endpoint in endpoints():
            for held in endpoint.held.values():
                if (
                    held.reply.startswith(prefix)
                    and held.reason is None
                    and not held.released
                    and (not strict or held.fits(0 if held.acked else 1))
                ):
                    return held
        return None
