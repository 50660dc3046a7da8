"""Which heartbeats go to Redis in full, and which only push the instance's expiry.

A full heartbeat (the registry's ``heartbeat`` function) checks the instance's hash,
rewrites its state and index entries and tells views when routing would change. Most
beats change nothing: for those a registry sends a bare ``PEXPIRE`` of the hash, which
costs Redis a fraction of the function call and views nothing. A beat goes in full when
the status, capacity or trust differ from the last full one, when the load has moved by
``LOAD_STEP`` of the capacity since the load views last heard, and every
``VERIFY_EVERY`` beats whatever happened (so an altered hash or index entry is found and
restored within that many beats).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ._records import InstanceState, RegistryKeys, trust_arg
from ._scripts import FUNCTIONS, LOAD_STEP, MAX_BEATS
from .profile import AgentProfile

__all__ = ["VERIFY_EVERY", "Beats", "Written"]

VERIFY_EVERY = 10
"""A full heartbeat at least once per this many beats of one instance."""


@dataclass(slots=True)
class Written:
    """What a registry last wrote of one of its instances."""

    name: str
    fingerprint: str
    """SHA-1 of the profile and capabilities JSON registered."""
    status: str
    load: int
    """The load views last heard of."""
    capacity: int
    trust: str
    beats: int = 0
    """Beats since the last full one (a registration starts it anywhere in the cycle, so
    instances registered together do not all go in full on the same beat)."""

    def needs_full(self, status: str, load: int, capacity: int, trust: str) -> bool:
        """Whether this beat must go in full (else a bare expiry push will do)."""
        return (
            self.beats + 1 >= VERIFY_EVERY
            or status != self.status
            or capacity != self.capacity
            or trust != self.trust
            or (capacity > 0 and abs(load - self.load) >= LOAD_STEP * capacity)
        )

    def sent(self, full: bool, status: str, load: int, capacity: int, trust: str) -> None:
        """Note a beat Redis took."""
        if not full:
            self.beats += 1
            return
        if (
            status != self.status
            or capacity != self.capacity
            or trust != self.trust
            or (capacity > 0 and abs(load - self.load) >= LOAD_STEP * capacity)
        ):
            self.load = load  # the function published it (it applies the same rule)
        self.status, self.capacity, self.trust, self.beats = status, capacity, trust, 0


@dataclass(slots=True)
class Plan:
    """One heartbeat's commands: a full FCALL per instance in ``full``, then BEATs for ``light``."""

    states: Sequence[InstanceState]
    commands: list[tuple[Any, ...]] = field(default_factory=list)
    full: list[InstanceState] = field(default_factory=list)
    light: list[InstanceState] = field(default_factory=list)


class Beats:
    """What a registry wrote of each of its instances (at most ``limit``), and its heartbeats' commands."""

    def __init__(self, keys: RegistryKeys, ttl_ms: int, *, limit: int = 100_000) -> None:
        self.keys = keys
        self.ttl_ms = ttl_ms
        self.limit = limit
        self._written: dict[str, Written] = {}

    def remember(self, profile: AgentProfile, written: str, trust: str) -> None:
        """Note a registration: ``written`` is the profile and capabilities JSON sent."""
        if len(self._written) >= self.limit and profile.agent_id not in self._written:
            self._written.pop(next(iter(self._written)))  # bounded: forget the oldest
        fingerprint = hashlib.sha1(written.encode()).hexdigest()
        self._written[profile.agent_id] = Written(
            profile.name,
            fingerprint,
            profile.status,
            profile.load,
            profile.capacity,
            trust,
            beats=int(fingerprint[:4], 16) % VERIFY_EVERY,
        )

    def forget(self, agent_id: str) -> None:
        self._written.pop(agent_id, None)

    def plan(self, states: Sequence[InstanceState]) -> Plan:
        """The commands of one heartbeat of ``states``, to send in one pipeline."""
        plan = Plan(states)
        prefix, ttl = self.keys.prefix, self.ttl_ms
        for s in states:
            trust = trust_arg(s.trust)
            written = self._written.get(s.agent_id)
            if written is None or written.needs_full(s.status, s.load, s.capacity, trust):
                name, fingerprint = (written.name, written.fingerprint) if written else ("", "")
                args = (prefix, s.agent_id, ttl, s.status, s.load, s.capacity, name, fingerprint, trust)
                instance = self.keys.instance(s.agent_id)
                indexes = (self.keys.instances, self.keys.capsof)
                plan.commands.append(("FCALL", FUNCTIONS["heartbeat"], 3, instance, *indexes, *args))
                plan.full.append(s)
            else:
                plan.light.append(s)
        for i in range(0, len(plan.light), MAX_BEATS):
            keys = [self.keys.instance(s.agent_id) for s in plan.light[i : i + MAX_BEATS]]
            plan.commands.append(("FCALL", FUNCTIONS["beat"], len(keys), *keys, prefix, ttl))
        return plan

    def lost(self, plan: Plan, replies: Sequence[Any]) -> list[str]:
        """The ids Redis answered are gone or altered; the others are noted as sent."""
        lost = {s.agent_id for s, ok in zip(plan.full, replies, strict=False) if not ok}
        for i, reply in zip(range(0, len(plan.light), MAX_BEATS), replies[len(plan.full) :], strict=True):
            chunk = plan.light[i : i + MAX_BEATS]
            lost.update(chunk[int(n) - 1].agent_id for n in reply if 0 < int(n) <= len(chunk))
        for full, group in ((True, plan.full), (False, plan.light)):
            for s in group:
                written = self._written.get(s.agent_id)
                if written is not None and s.agent_id not in lost:
                    written.sent(full, s.status, s.load, s.capacity, trust_arg(s.trust))
        return [s.agent_id for s in plan.states if s.agent_id in lost]
