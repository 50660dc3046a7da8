"""The caller's watch over its calls: probe rounds that end calls whose callee died.

Every PROBE_EVERY seconds (``bus/protocol.py``) each call out for longer than PROBE_AFTER
is looked at:

    acknowledged, or sent to one instance   that instance is probed (``A2A-Probe: 1``);
                                            "no responders", and again LOST_CONFIRM
                                            later: AGENT_LOST
    sent to an agent, not acknowledged      the agent's instances are asked which of them
                                            received it (``A2A-Probe: calls``); "no
                                            responders": no instance is left, AGENT_LOST;
                                            one that received it acknowledges it; unclaimed
                                            for UNCLAIMED_FOR seconds of rounds in a row (or
                                            half the call's timeout): AGENT_LOST

A round does not wait for the verdicts: each probe runs in a task of the watch and settles
the calls it concerns when its verdict comes (PROBE_EVERY later at most), so a silent
instance never slows the rounds down. An instance or agent with a probe still out is not
probed again meanwhile. No round runs while the connection is down, and a probe without a
verdict (see :meth:`bus.caller.Caller.probe`) counts for nothing. The probes also tell each
callee that this runtime is alive (see :class:`bus.callers.Callers`).
"""

from __future__ import annotations

import logging

import anyio
from anyio.abc import TaskGroup

from .caller import Caller
from .errors import AgentLost
from .protocol import (
    LOST_CONFIRM,
    PROBE_AFTER,
    PROBE_CALLS,
    PROBE_EVERY,
    PROBE_HEADER,
    PROBE_IDS,
    PROBE_INSTANCE,
    UNCLAIMED_FOR,
    UNCLAIMED_ROUNDS,
    encode_probe,
)

__all__ = ["Watch"]

log = logging.getLogger("a2a.bus")


class Watch:
    """Probe rounds over one caller's pending calls; :meth:`run` until cancelled."""

    def __init__(self, caller: Caller) -> None:
        self._caller = caller
        self._out: set[str] = set()
        """Instances ("i" + id) and agents ("a" + name) with a probe in flight."""
        self.rounds = 0

    async def run(self) -> None:
        transport = self._caller.link.transport
        async with anyio.create_task_group() as tg:
            while True:
                await anyio.sleep(PROBE_EVERY)
                if transport.is_connected:  # a probe now would only wait in a buffer
                    self.round(tg)

    def round(self, tg: TaskGroup) -> None:
        """Start the probes of one round in ``tg``."""
        self.rounds += 1
        caller = self._caller
        subjects = caller.link.subjects
        before = anyio.current_time() - PROBE_AFTER
        instances: dict[str, list[str]] = {}
        agents: dict[str, list[str]] = {}
        for correlation_id, slot in caller.pending.items():
            # Probes have no subject; calls in this process end with it.
            if slot.opened >= before or slot.local or not slot.subject or slot.future.done():
                continue
            instance = slot.instance or subjects.instance_of(slot.subject)
            if instance is not None:
                instances.setdefault(instance, []).append(correlation_id)
            elif agent := subjects.agent_of(slot.subject):
                agents.setdefault(agent, []).append(correlation_id)
        out = self._out
        for instance, ids in instances.items():
            if "i" + instance not in out:
                out.add("i" + instance)
                tg.start_soon(self._instance, instance, ids)
        for agent, ids in agents.items():
            if "a" + agent not in out:
                out.add("a" + agent)
                tg.start_soon(self._agent, agent, ids)

    async def _instance(self, instance: str, ids: list[str]) -> None:
        """Probe an instance; when nobody serves it, twice LOST_CONFIRM apart, its calls are lost."""
        caller = self._caller
        try:
            subject = caller.link.subjects.instance(instance)
            probe = {PROBE_HEADER: PROBE_INSTANCE}
            if await caller.probe(subject, probe, timeout=PROBE_EVERY) != "nobody":
                return
            # Perhaps only reconnecting (its subscriptions come back with its connection).
            await anyio.sleep(LOST_CONFIRM)
            if await caller.probe(subject, probe, timeout=PROBE_EVERY) != "nobody":
                return
        except ValueError:  # not an instance id (acknowledgements are checked: never expected)
            return
        finally:
            self._out.discard("i" + instance)
        pending = caller.pending
        for correlation_id in ids:
            slot = pending.get(correlation_id)
            if slot is not None and slot.instance in (None, instance):
                pending.resolve(
                    correlation_id,
                    AgentLost(
                        f"{instance} stopped responding while handling the call",
                        agent=instance,
                        details={"instance": instance},
                    ),
                )

    async def _agent(self, agent: str, ids: list[str]) -> None:
        try:
            async with anyio.create_task_group() as tg:
                for start in range(0, len(ids), PROBE_IDS):
                    tg.start_soon(self._ask, agent, ids[start : start + PROBE_IDS])
        finally:
            self._out.discard("a" + agent)

    async def _ask(self, agent: str, ids: list[str]) -> None:
        """Ask ``agent``'s instances which received these unacknowledged calls."""
        caller = self._caller
        subject = caller.link.subjects.cancel(agent)
        asked = anyio.current_time()
        verdict = await caller.probe(
            subject, {PROBE_HEADER: PROBE_CALLS}, encode_probe(ids), timeout=PROBE_EVERY
        )
        if verdict == "failed" or (verdict != "nobody" and caller.settling):
            return  # no verdict: not sent, or an answer may have been lost with the connection
        pending = caller.pending
        now = anyio.current_time()
        lost = 0
        for correlation_id in ids:
            slot = pending.get(correlation_id)
            if slot is None or slot.future.done() or slot.instance is not None:
                continue  # ended, or claimed: its instance is probed from now on
            if verdict == "nobody":
                message = f"no instance of {agent} is left to finish the call"
            else:
                if not slot.unclaimed:
                    slot.unclaimed_since = asked
                slot.unclaimed += 1
                # A blocked or busy callee claims nothing either: only long silence is loss.
                quiet = max(UNCLAIMED_FOR, (slot.deadline - slot.opened) / 2)
                if slot.unclaimed < UNCLAIMED_ROUNDS or now - slot.unclaimed_since < quiet:
                    continue
                message = f"no instance of {agent} claimed the call for {now - slot.unclaimed_since:.0f}s"
            lost += pending.resolve(correlation_id, AgentLost(message, agent=agent, details={"agent": agent}))
        if lost:
            why = "no instance is left" if verdict == "nobody" else "no instance claims them"
            log.info("%d calls to %s lost: %s", lost, agent, why)
