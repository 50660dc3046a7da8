"""A runtime's local view of the registry, kept fresh by change events.

Routing reads this view, so a call does not touch Redis. The view subscribes to the
registry's event channel, loads every live instance once after (re)subscribing, and
then applies events: ``reg`` (new or changed profile), ``st`` (a heartbeat that changed
status, capacity, trust, or load by a quarter of the capacity), ``down`` (deregistered,
or expired). Heartbeats that change nothing send nothing, so a view's work follows
change, not the registry's size. Deaths are announced by the registry's sweeper: one
view at a time holds its lease (``Registry.expire_due``) and calls it as the next
instance's expiry comes due, so a dead instance leaves every view within its ttl (3
heartbeat intervals) and a few milliseconds; should the sweeping process die, another
takes the lease over when it ends (one ttl later). While Redis is unreachable the view
keeps its last known state and routing carries on from it.

Anyone who may publish on the channel may publish anything, so no event is believed:
one that does not decode or validate is skipped and counted in :attr:`LocalView.rejected`,
and what an event says is read back from the registry, which validates entries and their
size (``discovery._validate``, ``discovery.limits``) and what the roster lets their agent
advertise (``discovery._grants``), at most once per heartbeat interval per instance
(``discovery._refetch``; requests in between make one read when the interval is over). So
a ``reg`` costs a read, a ``down`` removes an entry only when the registry reads it as gone,
and an ``st`` that changes an entry's status, capacity or trust (in either direction) is
applied only as read back: a forged one costs a read, nothing more. An ``st`` that moves
only the load (which breaks ties between equally scored instances, nothing else) is applied
at once, and the entry is read back one interval later, so an idle instance's entry
returns to the truth within one interval whatever was published. A view also keeps at most
the number of instances of one agent that its grant allows.
"""

from __future__ import annotations

import contextlib
import logging
import random
import secrets
import time
from collections.abc import Sequence

import anyio
from anyio.abc import TaskStatus

from bus.errors import Unavailable
from bus.rejects import Rejects

from ._entry import ViewEntry
from ._events import Event, parse_event
from ._quarantine import Quarantine
from ._ranking import TIE_WINDOW, RankedEntries
from ._refetch import ReadBudget, Refetch
from ._validate import Invalid
from .errors import AccessDenied, redis_errors
from .profile import AgentProfile
from .registry import Registry

__all__ = ["TIE_WINDOW", "LocalView", "ViewEntry"]

log = logging.getLogger("a2a.discovery.view")

MAX_WAITING = 256
"""Instances of one agent a view remembers having refused for its instance count."""
SWEEP_EVERY = 60.0
"""Least time, in seconds, between the sweeper's passes over the whole ``instances`` set."""
_EVENTS = "the registry's events subscription"


class LocalView(RankedEntries):
    """In-memory copy of the registry; run :meth:`run` in a task group to keep it fresh.

    Routing reads it through :class:`RankedEntries` (``best``, ``get``,
    ``find_agents_with_capability``).

    Args:
        registry: the registry to follow.
        trust_floor: instances trusted less are never chosen by capability (default: the
            registry's); the others are ranked by match score times trust.
    """

    def __init__(
        self, registry: Registry, *, trust_floor: float | None = None, read_budget: int = 1000
    ) -> None:
        """``read_budget``: the reads of instances that events name this view makes per
        heartbeat interval (or as many as it holds entries, if more) before it takes a flood
        for what it is and loads a snapshot once the interval is over instead."""
        super().__init__(trust_floor=registry.trust_floor if trust_floor is None else trust_floor)
        self.registry = registry
        self.connected = False
        self.sweeper_id = f"view-{secrets.token_hex(8)}"
        """This view's name on the sweeper's lease."""
        self.ready = anyio.Event()
        self.resyncs = 0
        self.rejects = Rejects(log, "registry event")
        self._quarantine = Quarantine(registry.ttl)
        self._unconfirmed = Quarantine(registry.heartbeat_interval, limit=10_000_000)  # bounded by entries
        """Entries a resync's snapshot lacked, kept until read back one interval later."""
        self._refetch = Refetch(registry.heartbeat_interval)
        self._recheck = Quarantine(registry.heartbeat_interval, limit=10_000_000)  # bounded by entries
        """Entries whose load an event changed, read back one interval later."""
        self._budget = ReadBudget(registry.heartbeat_interval, floor=read_budget)
        self._over_cap: dict[str, dict[str, None]] = {}
        """Agent -> instances refused because it had as many as its grant allows: read back
        when one of its entries goes (at most ``MAX_WAITING`` per agent)."""
        self._grants_seen = registry.granted

    @property
    def rejected(self) -> int:
        """Events refused so far (invalid registry entries are counted by ``registry.rejected``)."""
        return self.rejects.total

    # -- writing ---------------------------------------------------------------

    def drop(self, agent_id: str) -> None:
        """Remove an instance found dead or fake, and ignore news of it for ``registry.ttl`` seconds.

        Events and snapshot rows about it are skipped meanwhile, so neither a stale entry
        nor forged heartbeats bring it back before its hash has had time to expire. Then
        it is read back: an instance that was only out of reach (a link down) returns,
        since a live one sends no news by itself.
        """
        self.remove(agent_id)
        self._quarantine.add(agent_id)

    def remove(self, agent_id: str) -> None:
        entry = self._entries.get(agent_id)
        super().remove(agent_id)
        if entry is not None:
            for waiting in self._over_cap.pop(entry.profile.name, {}):
                self._recheck.add(waiting)  # a place is free: read back within an interval

    def replace_all(self, profiles: Sequence[AgentProfile]) -> None:
        """Forget every entry and load these (a snapshot of the registry)."""
        self.clear()
        self._over_cap.clear()
        self._grants_seen = self.registry.granted
        for profile in profiles:
            if profile.agent_id not in self._quarantine:
                self._admit(profile)

    def _admit(self, profile: AgentProfile) -> None:
        """Upsert an entry read from the registry, unless its agent has as many instances as
        its grant allows already (its further instances are counted and ignored)."""
        limit = self.registry.granted.max_instances(profile.name)
        if (
            limit is not None
            and profile.agent_id not in self._entries
            and self.instances_of(profile.name) >= limit
        ):
            self.rejects(
                "instances", f"{profile.agent_id}: agent {profile.name} has {limit} instances already"
            )
            waiting = self._over_cap.setdefault(profile.name, {})
            if len(waiting) < MAX_WAITING:
                waiting[profile.agent_id] = None
            return
        self.upsert(profile)

    # -- keeping fresh -----------------------------------------------------------

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Follow the registry until cancelled, reconnecting with backoff while Redis is away.

        Reports started at once: routing waits on :attr:`ready`, never on Redis.
        """
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._sweep)
            task_status.started()
            backoff = 0.1
            refused = False
            while True:
                try:
                    await self._follow()
                except (Unavailable, OSError) as exc:
                    if self.connected:
                        log.warning("registry events lost (%s); routing from the last known view", exc)
                    elif isinstance(exc, AccessDenied) and not refused:
                        refused = True  # a configuration error: said once, loudly
                        log.warning(
                            "this Redis user may not follow the registry (%s): regenerate its ACL", exc
                        )
                    else:
                        log.debug("registry still unreachable: %s", exc)
                    self.connected = False
                await anyio.sleep(backoff * (1 + random.random()))
                backoff = min(backoff * 2, self.registry.heartbeat_interval)

    async def _follow(self) -> None:
        pubsub = self.registry.pubsub()
        try:
            with redis_errors(_EVENTS):
                await pubsub.subscribe(self.registry.keys.events)
            self._resync(await self.registry.list_agents())
            self.connected = True
            self.resyncs += 1
            self.ready.set()
            wait = min(1.0, self.registry.heartbeat_interval / 2)
            while True:
                with redis_errors(_EVENTS):
                    msg = await pubsub.get_message(timeout=wait)
                if msg is not None and msg.get("type") in ("message", b"message"):
                    await self._apply_safely(msg.get("data"))
                due = self._refetch.due() + self._quarantine.expire() + self._unconfirmed.expire()
                for agent_id in due + self._recheck.expire():
                    if self._budget.take(len(self._entries)):  # else the resync covers it
                        await self._fetch(agent_id)
                # The roster's grants changed (an admin reloaded them), or events asked for more
                # reads than the budget: a snapshot, read under the grants as they are now.
                if await self.registry.grants() is not self._grants_seen or self._budget.resync_due():
                    self._resync(await self.registry.list_agents())
                    self.resyncs += 1
        finally:
            with (
                anyio.CancelScope(shield=True),
                anyio.move_on_after(1),
                contextlib.suppress(OSError),
                redis_errors(_EVENTS),
            ):
                await pubsub.aclose()  # type: ignore[no-untyped-call]

    async def _apply_safely(self, raw: object) -> None:
        """Apply one event; whatever it holds, the loop that follows the registry goes on."""
        try:
            await self._apply(raw)
        except (Unavailable, OSError):
            raise  # the connection's trouble, not the event's: reconnect
        except Exception as exc:  # an input no check foresaw must not stop routing
            self.rejects("event", f"{type(exc).__name__}: {exc}")

    async def _apply(self, raw: object) -> None:
        try:
            event = parse_event(raw)
        except Invalid as exc:
            self.rejects(exc.kind, exc)
            return
        if event is None or event.id in self._quarantine:
            return
        if event.e == "down":
            # Forged? The registry says: the entry goes only if its hash reads as gone (now,
            # or once the interval since its last read is over: a forged flood costs reads).
            # An entry a resync's snapshot lacked waits for its own read, an interval after the
            # resync: after a failover the sweeper announces as dead the instances whose hashes
            # the new master lacks until they register again.
            if event.id in self._entries and not self._unconfirmed.waiting(event.id):
                await self._read_back(event.id)
            return
        if event.e == "st" and event.status is not None:
            entry = self._entries.get(event.id)
            if entry is not None and _load_only(entry.profile, event):
                # Load breaks ties only: applied now, checked one interval later.
                entry.profile.load = event.load or 0
                if not self._recheck.waiting(event.id):  # a flood does not postpone it
                    self._recheck.add(event.id)
                return
            # Status, capacity or trust: believed only as read back (a forged one costs a read).
        await self._read_back(event.id)

    def _resync(self, profiles: Sequence[AgentProfile]) -> None:
        """Load a snapshot, keeping for one heartbeat interval the entries it lacks.

        After an outage (a failover, Redis restarted empty) the snapshot may come before
        the instances' heartbeats have registered them again: they stay routable meanwhile,
        and are then read back (those still missing are gone).
        """
        before = self._entries.copy()
        self.replace_all(profiles)
        for agent_id, entry in before.items():
            if agent_id not in self._entries and agent_id not in self._quarantine:
                self.upsert(entry.profile)
                self._unconfirmed.add(agent_id)

    async def _read_back(self, agent_id: str) -> None:
        """Read an instance an event names: now, or once its interval is over. When events ask
        for more reads than a :class:`ReadBudget` allows (a flood of distinct ids), the view
        loads a snapshot instead, once the budget's window is over."""
        if not self._refetch.allow(agent_id):
            return
        if self._budget.take(len(self._entries)):
            await self._fetch(agent_id)
        else:
            self.rejects("flood", "more events than a view reads back per interval: a resync follows")

    async def _fetch(self, agent_id: str) -> None:
        """Read one instance back (validated by the registry): its entry is what Redis holds, or none."""
        profile = await self.registry.get(agent_id)
        if profile is None:
            self.remove(agent_id)
        elif agent_id not in self._quarantine:
            self._admit(profile)

    async def _sweep(self) -> None:
        """Take turns at the registry's sweeper: call it as expiries come due while holding its lease.

        The holder calls again when the next instance expires, and at least four times per
        heartbeat interval (instances of runtimes with shorter intervals expire sooner); the
        others when the lease ends. A user that may not write the registry (a client) gets
        an error and tries again a minute later. The holder also passes over the whole
        ``instances`` set once a minute (``Registry.sweep``) for ids no expiry names.
        """
        interval = self.registry.heartbeat_interval
        last_pass = time.monotonic()
        while True:
            try:
                expiry = await self.registry.expire_due(self.sweeper_id, self.registry.ttl)
            except Unavailable as exc:
                log.debug("sweeper call failed: %s", exc)
                wait = SWEEP_EVERY if isinstance(exc, AccessDenied) else interval
            else:
                if expiry.held:
                    wait = interval / 4 if expiry.wait is None else min(expiry.wait, interval / 4)
                    if time.monotonic() - last_pass >= max(SWEEP_EVERY, 10 * self.registry.ttl):
                        last_pass = time.monotonic()
                        with contextlib.suppress(Unavailable):
                            await self.registry.sweep()
                else:
                    wait = min(interval, expiry.wait or interval) * (1 + 0.1 * random.random())
            await anyio.sleep(max(wait, 0.005))


def _load_only(profile: AgentProfile, event: Event) -> bool:
    """Whether a state event changes nothing of an entry but its load."""
    return (
        event.status == profile.status
        and (event.capacity or 0) == profile.capacity
        and event.trust == profile.trust
    )
