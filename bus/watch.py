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
                                            in a round after an instance of the agent this
                                            caller knew was found dead since the call was
                                            sent: AGENT_LOST; else unclaimed
                                            for UNCLAIMED_FOR seconds of rounds in a row (or
                                            half the call's timeout): AGENT_LOST

An instance is known to the watch while it holds calls of this runtime (sent to it or
acknowledged by it) and for UNCLAIMED_FOR seconds after. A call of a pool that nobody claims
went to an instance that died before acknowledging it, or to one that is blocked: when an
instance the watch knows is found dead (twice "no responders") after the call was sent, the
call is taken for lost at once (were it held by another instance blocked at that very moment,
that instance sees it withdrawn); otherwise only long silence is loss.

A round does not wait for the verdicts: each probe runs in a task of the watch and settles
the calls it concerns when its verdict comes (PROBE_EVERY later at most), so a silent
instance never slows the rounds down. An instance or agent with a probe still out is not
probed again meanwhile. No round runs while the connection is down, and a probe without a
verdict (see :meth:`bus.caller.Caller.probe`) counts for nothing. The probes also tell each
callee that this runtime is alive (see :class:`bus.callers.Callers`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import anyio
from anyio.abc import TaskGroup

from .caller import Caller, Verdict
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
from .subjects import instance_agent

__all__ = ["Watch"]

log = logging.getLogger("a2a.bus")

KNOWN_AGENTS = 256
"""Agents whose instances (and latest death) the watch remembers, the most recent kept."""
KNOWN_INSTANCES = 32
"""Instances remembered per agent, the most recent kept."""


class Watch:
    """Probe rounds over one caller's pending calls; :meth:`run` until cancelled."""

    def __init__(self, caller: Caller) -> None:
        self._caller = caller
        self._out: set[str] = set()
        """Instances ("i" + id) and agents ("a" + name) with a probe in flight."""
        self._known: dict[str, dict[str, float]] = {}
        """Agent -> instances of it holding calls of this caller lately, and when they last did."""
        self._died: dict[str, float] = {}
        """Agent -> when an instance of it was last found dead (its first "no responders")."""
        self._tg: TaskGroup | None = None
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
        self._tg = tg
        caller = self._caller
        subjects = caller.link.subjects
        now = anyio.current_time()
        before = now - PROBE_AFTER
        instances: set[str] = set()
        agents: dict[str, list[str]] = {}
        for correlation_id, slot in caller.pending.items():
            if slot.instance is not None:  # acknowledged: an instance of its agent, known from now on
                self._learn(slot.instance, now)
            # Probes have no subject; calls in this process end with it.
            if slot.opened >= before or slot.local or not slot.subject or slot.future.done():
                continue
            instance = slot.instance or subjects.instance_of(slot.subject)
            if instance is not None:
                instances.add(instance)
                if slot.instance is None:
                    self._learn(instance, now)
            elif agent := subjects.agent_of(slot.subject):
                agents.setdefault(agent, []).append(correlation_id)
        out = self._out
        for instance in instances:
            if "i" + instance not in out:
                out.add("i" + instance)
                tg.start_soon(self._instance, instance)
        for agent, ids in agents.items():
            if "a" + agent not in out:
                out.add("a" + agent)
                tg.start_soon(self._agent, agent, ids)

    async def _instance(self, instance: str) -> None:
        """Probe an instance; when nobody serves it, twice LOST_CONFIRM apart, the calls it held are lost."""
        caller = self._caller
        try:
            subject = caller.link.subjects.instance(instance)
            probe = {PROBE_HEADER: PROBE_INSTANCE}
            first = anyio.current_time()
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
        self._dead(instance, first)
        # Every call it held ends now, also those too young for this round's probe: calls
        # lost together end together (sent after the first probe, "no responders" ends them).
        subjects = caller.link.subjects
        pending = caller.pending
        held = [
            correlation_id
            for correlation_id, slot in pending.items()
            if slot.opened < first
            and not slot.local
            and not slot.future.done()
            and (slot.instance or subjects.instance_of(slot.subject)) == instance
        ]
        for correlation_id in held:
            pending.resolve(
                correlation_id,
                AgentLost(
                    f"{instance} stopped responding while handling the call",
                    agent=instance,
                    details={"instance": instance},
                ),
            )

    async def claims(self) -> None:
        """Before calls are sent again after a reconnect: ask the instances of each agent which
        received the calls sent to its queue group that none acknowledged, and give their
        acks ``PROBE_EVERY`` to come. A call acknowledged so goes again to the instance that
        holds it, which answers a repeat and never runs it twice; sent to the queue group
        again, another instance would run it too. (An ack lost with the connection less than
        ``PROBE_EVERY`` before is not sent again: such a call may still run twice.)"""
        caller = self._caller
        subjects = caller.link.subjects
        asking: dict[str, list[str]] = {}
        for correlation_id, slot in caller.pending.items():
            unclaimed = slot.instance is None and not slot.local and not slot.future.done()
            if unclaimed and slot.subject and subjects.instance_of(slot.subject) is None:  # a queue group
                asking.setdefault(subjects.agent_of(slot.subject), []).append(correlation_id)
        async with anyio.create_task_group() as tg:
            for agent, ids in asking.items():
                for some in _per_probe(ids):
                    tg.start_soon(self._claims, agent, some)

    async def _claims(self, agent: str, ids: list[str]) -> Verdict:
        """Ask ``agent``'s instances which received these unacknowledged calls: those that did
        acknowledge them (on the calls' own reply subjects) within ``PROBE_EVERY``."""
        caller = self._caller
        subject, calls = caller.link.subjects.cancel(agent), {PROBE_HEADER: PROBE_CALLS}
        return await caller.probe(subject, calls, encode_probe(ids), timeout=PROBE_EVERY)

    async def _agent(self, agent: str, ids: list[str]) -> None:
        try:
            async with anyio.create_task_group() as tg:
                for some in _per_probe(ids):
                    tg.start_soon(self._ask, agent, some)
        finally:
            self._out.discard("a" + agent)

    async def _ask(self, agent: str, ids: list[str]) -> None:
        """Ask ``agent``'s instances which received these unacknowledged calls; end those no
        instance is left to finish, or none claims for long."""
        caller = self._caller
        asked = anyio.current_time()
        verdict = await self._claims(agent, ids)
        if verdict == "failed" or (verdict != "nobody" and caller.settling):
            return  # no verdict: not sent, or an answer may have been lost with the connection
        pending = caller.pending
        now = anyio.current_time()
        died = self._died.get(agent, -1.0)
        suspect = False
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
                if died >= slot.opened:  # the dead one held it: the live ones were asked
                    message = f"an instance of {agent} died and no other claims the call"
                elif slot.unclaimed < UNCLAIMED_ROUNDS or now - slot.unclaimed_since < quiet:
                    suspect = True
                    continue
                else:
                    message = f"no instance of {agent} claimed the call for {now - slot.unclaimed_since:.0f}s"
            lost += pending.resolve(correlation_id, AgentLost(message, agent=agent, details={"agent": agent}))
        if lost:
            why = "no instance is left" if verdict == "nobody" else "no instance claims them"
            log.info("%d calls to %s lost: %s", lost, agent, why)
        if suspect:
            self._check_known(agent)

    def _learn(self, instance: str, now: float) -> None:
        """Remember that ``instance`` holds a call now (the oldest forgotten when full)."""
        agent = instance_agent(instance)
        known = self._known.get(agent)
        if known is None:
            if len(self._known) >= KNOWN_AGENTS:
                del self._known[next(iter(self._known))]
            known = self._known[agent] = {}
        elif instance not in known and len(known) >= KNOWN_INSTANCES:
            del known[next(iter(known))]
        known[instance] = now

    def _dead(self, instance: str, at: float) -> None:
        """``instance`` was found dead (first seen so at ``at``): unclaimed calls sent before may be lost."""
        agent = instance_agent(instance)
        self._known.get(agent, {}).pop(instance, None)
        self._died.pop(agent, None)
        if len(self._died) >= KNOWN_AGENTS:
            del self._died[next(iter(self._died))]
        self._died[agent] = at

    def _check_known(self, agent: str) -> None:
        """Probe the instances of ``agent`` this caller knows (a dead one explains unclaimed calls)."""
        tg = self._tg
        known = self._known.get(agent)
        if tg is None or known is None:
            return
        recent = anyio.current_time() - UNCLAIMED_FOR
        for instance, seen in list(known.items()):
            if seen < recent:  # long gone or idle: its death now would explain nothing
                del known[instance]
            elif "i" + instance not in self._out:
                self._out.add("i" + instance)
                tg.start_soon(self._instance, instance)


def _per_probe(ids: list[str]) -> Iterator[list[str]]:
    """``ids`` in groups of as many as one probe names (``PROBE_IDS``)."""
    for start in range(0, len(ids), PROBE_IDS):
        yield ids[start : start + PROBE_IDS]
