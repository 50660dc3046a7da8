"""The callee's watch over the runtimes that call it: the calls of a runtime that is gone stop.

A calling runtime probes the instances holding its calls (``bus/protocol.py``), and each
probe tells the callee that runtime is alive. When a runtime with calls held here has not
been heard from for CALLER_QUIET seconds, the callee checks it with ``A2A-Probe: caller``
on the reply subject of one of those calls: "no responders" means the runtime's reply
subscription is gone (its process died, or lost its connection), and every call held for
it here stops with CANCELLED (reason CALLER_GONE). A handler stopped so withdraws the calls
it made in turn, so the withdrawal runs down a chain of relays.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

import anyio
from anyio.abc import TaskGroup

from .callee import Endpoint
from .caller import Caller
from .held import Held
from .protocol import CALLER_GONE, CALLER_QUIET, MAX_RESPONSES, PROBE_CALLER, PROBE_EVERY, PROBE_HEADER

__all__ = ["Callers"]

log = logging.getLogger("a2a.bus")


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
        self._checking: set[str] = set()
        self.checks = 0
        """Runtimes checked with ``A2A-Probe: caller``."""
        self.withdrawn = 0
        """Calls stopped because the runtime that made them was gone."""

    def heard(self, reply: str) -> None:
        """A probe with the reply subject ``reply`` came in: its runtime is alive now."""
        prefix = self._runtime_prefix(reply)
        if prefix is not None:
            self._heard[prefix] = anyio.current_time()

    async def run(self, endpoints: Callable[[], Iterable[Endpoint]]) -> None:
        """Check quiet runtimes every PROBE_EVERY seconds, until cancelled."""
        async with anyio.create_task_group() as tg:
            while True:
                await anyio.sleep(PROBE_EVERY)
                self.round(tg, endpoints, anyio.current_time())

    def round(self, tg: TaskGroup, endpoints: Callable[[], Iterable[Endpoint]], now: float) -> None:
        """Start, in ``tg``, a check of each runtime with calls held here and quiet for too long."""
        calling: dict[str, list[Held]] = {}
        quiet: set[str] = set()
        heard = self._heard
        for endpoint in endpoints():
            for held in endpoint.held.values():
                if held.released or held.reason is not None:
                    continue
                prefix = self._runtime_prefix(held.reply)
                if prefix is None or prefix == self._own:
                    continue  # a plain NATS requester, or this very process
                calling.setdefault(prefix, []).append(held)
                if now - max(held.started, heard.get(prefix, 0.0)) >= CALLER_QUIET:
                    quiet.add(prefix)
        for prefix in [p for p in heard if p not in calling]:
            del heard[prefix]  # nothing held for it: forget it (probes keep this map small)
        for prefix in quiet - self._checking:
            self._checking.add(prefix)
            tg.start_soon(self._check, prefix, calling[prefix], endpoints)

    async def _check(
        self, prefix: str, calls: list[Held], endpoints: Callable[[], Iterable[Endpoint]]
    ) -> None:
        try:
            # Under generated permissions a call's reply subject takes MAX_RESPONSES messages:
            # the check may use the spare only while the reply still fits after it.
            carrier = next(
                (h for h in calls if not h.released and (not self._strict or h.sent <= MAX_RESPONSES - 2)),
                None,
            )
            if carrier is None:
                why = "silent, and none of its calls here can carry a check"
            else:
                self.checks += 1
                carrier.sent += 1
                verdict = await self._caller.probe(
                    carrier.reply, {PROBE_HEADER: PROBE_CALLER}, timeout=PROBE_EVERY
                )
                if verdict != "nobody":  # it is there (or no verdict): heard from, in effect
                    self._heard[prefix] = anyio.current_time()
                    return
                why = "nobody receives its replies any more"
            stopped = 0
            for endpoint in endpoints():
                for held in list(endpoint.held.values()):
                    if held.reply.startswith(prefix) and held.reason is None and not held.released:
                        held.cancel(CALLER_GONE)
                        stopped += 1
            self._heard.pop(prefix, None)
            self.withdrawn += stopped
            log.warning("stopped %d calls of the runtime %s: %s", stopped, prefix.rstrip("."), why)
        finally:
            self._checking.discard(prefix)
