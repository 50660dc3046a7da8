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

A view follows the whole registry (``follow="all"``) or what its process uses
(``follow="used"``): the channels of the capabilities it routes to and the agents it waits
for, learned on first use (:meth:`LocalView.follow`, or a :meth:`LocalView.best` missing
one), their instances loaded from Redis once (``discovery._interest``). It hears nothing
of the rest of the registry, and holds nothing of it but its own process's instances.

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
from collections.abc import Callable, Iterable, Sequence
from typing import Literal

import anyio
from anyio.abc import TaskStatus
from redis.asyncio.client import PubSub

from bus.errors import Unavailable
from bus.rejects import Rejects

from ._asking import Asking
from ._entry import ViewEntry
from ._events import load_only, parse_event
from ._interest import Copies, Interest, load
from ._quarantine import Quarantine
from ._ranking import TIE_WINDOW
from ._refetch import ReadBudget, Refetch
from ._sweeper import SWEEP_EVERY, take_turns
from ._validate import Invalid
from .errors import AccessDenied, redis_errors
from .profile import AgentProfile
from .registry import Registry

__all__ = ["SWEEP_EVERY", "TIE_WINDOW", "LocalView", "ViewEntry"]

log = logging.getLogger("a2a.discovery.view")

MAX_WAITING = 256
"""Instances of one agent a view remembers having refused for its instance count."""
_EVENTS = "the registry's events subscription"


class LocalView(Asking):
    """In-memory copy of the registry; run :meth:`run` in a task group to keep it fresh.

    Routing reads it through :class:`RankedEntries` (``best``, ``get``,
    ``find_agents_with_capability``).

    Args:
        registry: the registry to follow.
        trust_floor: instances trusted less are never chosen by capability (default: the
            registry's); the others are ranked by match score times trust.
        follow: ``"all"``, every instance of the registry; ``"used"``, the capabilities and
            agents asked for (module docstring).
    """

    def __init__(
        self,
        registry: Registry,
        *,
        trust_floor: float | None = None,
        read_budget: int = 1000,
        follow: Literal["all", "used"] = "all",
    ) -> None:
        """``read_budget``: the reads of instances that events name this view makes per
        heartbeat interval (or as many as it holds entries, if more) before it takes a flood
        for what it is and loads a snapshot once the interval is over instead."""
        floor = registry.trust_floor if trust_floor is None else trust_floor
        super().__init__(registry, trust_floor=floor, follow_all=follow == "all")
        self.registry = registry
        self.connected = False
        self.sweeper_id = f"view-{secrets.token_hex(8)}"
        """This view's name on the sweeper's lease."""
        self.resyncs = 0
        self.heard = 0
        """Messages received on the channels followed (each copy of an event counts)."""
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
        self._pubsub: PubSub | None = None
        """The subscription while connected (``follow`` adds channels to it)."""
        self._subscribed = False
        self._lock = anyio.Lock()
        """Held while subscribing and loading: a snapshot and a first load do not interleave."""
        self._reload = False
        self._copies = Copies()

    @property
    def rejected(self) -> int:
        """Events refused so far (invalid registry entries are counted by ``registry.rejected``)."""
        return self.rejects.total

    # -- following ---------------------------------------------------------------

    async def follow(
        self, capabilities: Iterable[str] = (), agents: Iterable[str] = (), *, ready_wait: float = 0.0
    ) -> None:
        """Follow these capabilities and agents from now on: subscribe to their channels, and
        load their instances from Redis once (before returning, when Redis can be reached;
        waiting up to ``ready_wait`` seconds for the view's first connection)."""
        with anyio.move_on_after(ready_wait):
            await self.ready.wait()
        await self._extend(lambda: self._interest.add(capabilities, agents))

    async def follow_all(self) -> None:
        """Follow the whole registry from now on (and load it now)."""
        await self._extend(self._interest.widen)

    async def _extend(self, add: Callable[[], Interest | None]) -> None:
        async with self._lock:
            new = add()
            pubsub = self._pubsub
            if new is None or pubsub is None:
                return  # nothing new, or not connected: the next connection subscribes and loads
            try:
                with redis_errors(_EVENTS):
                    await pubsub.subscribe(*new.channels())
                self._subscribed = True
                self._woken.set()
                for profile in await load(self.registry, new):
                    if profile.agent_id not in self._quarantine:
                        self._admit(profile)
            except (Unavailable, OSError) as exc:
                log.debug("could not load what the view now follows (%s): it reloads", exc)
                self._reload = True

    async def _asked_for(self) -> None:
        """Follow what synchronous reads missed since the last look."""
        asked, self._asked = self._asked, Interest(self.registry, everything=False)
        if asked.everything:
            await self.follow_all()
        elif asked.capabilities or asked.agents:
            await self.follow(asked.capabilities, asked.agents)

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
            tg.start_soon(take_turns, self.registry, self.sweeper_id)
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
            async with self._lock:
                channels = self._interest.channels()
                if channels:
                    with redis_errors(_EVENTS):
                        await pubsub.subscribe(*channels)
                self._subscribed = bool(channels)
                self._resync(await load(self.registry, self._interest))
                self._pubsub = pubsub
            self.connected = True
            self.resyncs += 1
            self.ready.set()
            wait = min(1.0, self.registry.heartbeat_interval / 2)
            while True:
                msg = None
                if self._subscribed:
                    with redis_errors(_EVENTS):
                        msg = await pubsub.get_message(timeout=wait)
                else:  # no channel yet: wait for the first thing to follow
                    with anyio.move_on_after(wait):
                        await self._woken.wait()
                if self._woken.is_set():
                    self._woken = anyio.Event()
                    await self._asked_for()
                if msg is not None and msg.get("type") in ("message", b"message"):
                    self.heard += 1
                    if not self._copies.seen(msg.get("channel"), msg.get("data")):
                        await self._apply_safely(msg.get("data"))
                due = self._refetch.due() + self._quarantine.expire() + self._unconfirmed.expire()
                for agent_id in due + self._recheck.expire():
                    if self._budget.take(len(self._entries)):  # else the resync covers it
                        await self._fetch(agent_id)
                # The roster's grants changed (an admin reloaded them), events asked for more
                # reads than the budget, or a first load failed: a snapshot, read under the
                # grants as they are now.
                grants = await self.registry.grants()
                if grants is not self._grants_seen or self._budget.resync_due() or self._reload:
                    async with self._lock:
                        self._reload = False
                        self._resync(await load(self.registry, self._interest))
                    self.resyncs += 1
        finally:
            self._pubsub = None
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
            if entry is not None and load_only(entry.profile, event):
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
