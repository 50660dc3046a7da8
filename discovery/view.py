"""A runtime's local view of the registry, kept fresh by change events.

Routing reads this view, so a call does not touch Redis. The view subscribes to the
registry's event channel, loads every live instance once after (re)subscribing, and
then applies events: ``reg`` (new or changed profile), ``st`` (heartbeat: status and
load), ``down`` (deregistered or swept). An entry that sends nothing for ``stale_after``
seconds is ignored, and forgotten after ``prune_after``. While Redis is unreachable the
view keeps its last known state (no entry goes stale) and routing carries on from it.

Anyone who may publish on the channel may publish anything, so no event is trusted:
one that does not decode or validate is skipped and counted in :attr:`LocalView.rejected`,
and profiles are read back from the registry, which validates them and their size
(``discovery._validate``, ``discovery.limits``), at most once per heartbeat interval per
instance (``discovery._refetch``). A forged ``st`` can skew an entry's status and load
only until the instance's next real heartbeat; a forged ``down`` removes an entry, and
the next real heartbeat (an ``st`` for an id the view does not know) reads it back.
"""

from __future__ import annotations

import bisect
import contextlib
import logging
import random
import time
from collections.abc import Callable, Iterable, Sequence

import anyio
import redis.exceptions
from anyio.abc import TaskStatus

from bus.errors import Unavailable
from bus.rejects import Rejects

from ._entry import ViewEntry
from ._events import parse_event
from ._quarantine import Quarantine
from ._refetch import Refetch
from ._validate import Invalid
from .profile import AgentProfile, AgentStatus
from .registry import Registry
from .scoring import match_score

__all__ = ["TIE_WINDOW", "LocalView", "ViewEntry"]

log = logging.getLogger("a2a.discovery.view")

TIE_WINDOW = 16
"""Equally proficient instances compared by load when one capability is asked for."""

PRUNE_AFTER = 60.0
"""Least time, in seconds, a stale entry is kept before the view forgets it."""


class LocalView:
    """In-memory copy of the registry; run :meth:`run` in a task group to keep it fresh.

    Args:
        registry: the registry to follow.
        stale_after: seconds without news after which an entry is not routed to
            (default: the registry's ttl).
        prune_after: seconds without news after which an entry is forgotten (default:
            ten times ``stale_after``, at least a minute).
    """

    def __init__(
        self, registry: Registry, *, stale_after: float | None = None, prune_after: float | None = None
    ) -> None:
        self.registry = registry
        self.stale_after = stale_after if stale_after is not None else registry.ttl
        self.prune_after = prune_after if prune_after is not None else max(PRUNE_AFTER, 10 * self.stale_after)
        self.ready = anyio.Event()
        self.connected = False
        self.resyncs = 0
        self.rejects = Rejects(log, "registry event")
        self._entries: dict[str, ViewEntry] = {}
        self._ranked: dict[str, list[tuple[float, str]]] = {}
        """Capability -> (-proficiency, instance id), best first."""
        self._quarantine = Quarantine(registry.ttl)
        self._refetch = Refetch(registry.heartbeat_interval)

    @property
    def rejected(self) -> int:
        """Events refused so far (invalid registry entries are counted by ``registry.rejected``)."""
        return self.rejects.total

    # -- reading ---------------------------------------------------------------

    def entries(self) -> list[ViewEntry]:
        """Live entries."""
        now = time.monotonic()
        return [e for e in self._entries.values() if self._is_live(e, now)]

    def get(self, agent_id: str) -> ViewEntry | None:
        entry = self._entries.get(agent_id)
        return entry if entry is not None and self._is_live(entry, time.monotonic()) else None

    def best(
        self,
        capabilities: Sequence[str],
        *,
        exclude: Iterable[str] = (),
        allowed: Callable[[str], bool] | None = None,
    ) -> ViewEntry | None:
        """The instance to route a request needing ``capabilities`` to.

        Highest match score among available instances, ties to the lower load. When
        every capable instance is busy, the least loaded busy one (it queues the
        request). Offline, stale and ``exclude``d instances are never chosen, nor
        instances of an agent whose name ``allowed`` rejects (the caller's rights).

        The same threshold search as the registry's script runs over per-capability
        lists ranked by proficiency, so the usual case reads a handful of entries
        whatever the registry's size.
        """
        if not capabilities:
            return None
        if len(capabilities) == 1:
            single = self._best_single(capabilities[0], exclude, allowed)
            if single is not None:
                return single
        excluded = set(exclude)
        now = time.monotonic()
        ranked = [self._ranked.get(cap, []) for cap in capabilities]
        seen: set[str] = set()
        best: tuple[float, float] | None = None
        chosen: ViewEntry | None = None
        depth = 0
        while True:
            threshold = 0.0
            more = False
            for entries in ranked:
                if depth >= len(entries):
                    continue
                neg_proficiency, agent_id = entries[depth]
                threshold -= neg_proficiency
                more = more or depth + 1 < len(entries)
                if agent_id in seen or agent_id in excluded:
                    continue
                seen.add(agent_id)
                entry = self._entries[agent_id]
                key = self._rank(entry, capabilities, "available", now)
                if (
                    key is not None
                    and (best is None or key > best)
                    and (allowed is None or allowed(entry.profile.name))
                ):
                    best, chosen = key, entry
            if best is not None and best[0] >= threshold / len(capabilities):
                return chosen
            if not more:
                break
            depth += 1
        return chosen or self._least_loaded_busy(capabilities, excluded, now, allowed)

    def _best_single(
        self, capability: str, exclude: Iterable[str], allowed: Callable[[str], bool] | None
    ) -> ViewEntry | None:
        """The common case of one capability: walk its ranked list, best proficiency first.

        Among the first ``TIE_WINDOW`` available live instances of the highest proficiency,
        the least loaded wins (as the Redis script compares a batch), so the walk costs
        the same with ten replicas or ten thousand. None when no available instance has
        the capability (the general search then looks at busy ones).
        """
        now = time.monotonic()
        chosen: ViewEntry | None = None
        chosen_load = 0.0
        top = 0.0
        candidates = 0
        for neg_proficiency, agent_id in self._ranked.get(capability, ()):
            if chosen is not None and (neg_proficiency != top or candidates >= TIE_WINDOW):
                break
            if neg_proficiency >= 0.0 or agent_id in exclude:
                continue  # proficiency 0 never matches
            entry = self._entries[agent_id]
            profile = entry.profile
            if profile.status != "available" or not self._is_live(entry, now):
                continue
            if allowed is not None and not allowed(profile.name):
                continue
            load = profile.load / profile.capacity if profile.capacity > 0 else 0.0
            candidates += 1
            if chosen is None or load < chosen_load:
                chosen, chosen_load, top = entry, load, neg_proficiency
        return chosen

    def find_agents_with_capability(self, capability: str) -> list[AgentProfile]:
        """Every live, available instance offering ``capability``, best proficiency first."""
        now = time.monotonic()
        found = []
        for _, agent_id in self._ranked.get(capability, ()):
            entry = self._entries[agent_id]
            if entry.profile.status == "available" and self._is_live(entry, now):
                found.append(entry.profile)
        return found

    def _least_loaded_busy(
        self,
        capabilities: Sequence[str],
        excluded: set[str],
        now: float,
        allowed: Callable[[str], bool] | None,
    ) -> ViewEntry | None:
        """Every capable instance is busy (rare): the best of them, ties to the lower load."""
        best: tuple[float, float] | None = None
        chosen: ViewEntry | None = None
        ids = {agent_id for cap in capabilities for _, agent_id in self._ranked.get(cap, ())}
        for agent_id in ids - excluded:
            entry = self._entries[agent_id]
            key = self._rank(entry, capabilities, "busy", now)
            if (
                key is not None
                and (best is None or key > best)
                and (allowed is None or allowed(entry.profile.name))
            ):
                best, chosen = key, entry
        return chosen

    def _rank(
        self, entry: ViewEntry, capabilities: Sequence[str], status: AgentStatus, now: float
    ) -> tuple[float, float] | None:
        """(score, -load ratio) of a live entry in ``status`` that matches at all, else None."""
        if entry.profile.status != status or not self._is_live(entry, now):
            return None
        score = match_score(entry.proficiencies, capabilities)
        return (score, -entry.load_ratio) if score > 0 else None

    def _is_live(self, entry: ViewEntry, now: float) -> bool:
        return not self.connected or now - entry.seen < self.stale_after

    # -- writing ---------------------------------------------------------------

    def upsert(self, profile: AgentProfile) -> None:
        """Add or replace an entry (own instances are applied at once, not via Redis)."""
        old = self._entries.get(profile.agent_id)
        if old is not None:
            self._unindex(old)
        entry = ViewEntry(profile, profile.proficiencies(), time.monotonic())
        self._entries[profile.agent_id] = entry
        for cap, proficiency in entry.proficiencies.items():
            bisect.insort(self._ranked.setdefault(cap, []), (-proficiency, profile.agent_id))

    def set_state(self, agent_id: str, status: AgentStatus, load: int, capacity: int) -> bool:
        """Apply a heartbeat; False when the instance is unknown."""
        entry = self._entries.get(agent_id)
        if entry is None:
            return False
        entry.profile.status = status
        entry.profile.load = load
        entry.profile.capacity = capacity
        entry.seen = time.monotonic()
        return True

    def remove(self, agent_id: str) -> None:
        entry = self._entries.pop(agent_id, None)
        if entry is not None:
            self._unindex(entry)

    def drop(self, agent_id: str) -> None:
        """Remove an instance found dead or fake, and ignore news of it for ``registry.ttl`` seconds.

        Events and snapshot rows about it are skipped meanwhile, so neither a stale entry
        nor forged heartbeats bring it back before its hash has had time to expire.
        """
        self.remove(agent_id)
        self._quarantine.add(agent_id)

    def prune(self) -> int:
        """Forget entries with no news for ``prune_after`` seconds; returns how many."""
        if not self.connected:
            return 0  # Redis is away: the last known state is all there is
        limit = time.monotonic() - self.prune_after
        old = [agent_id for agent_id, entry in self._entries.items() if entry.seen < limit]
        for agent_id in old:
            self.remove(agent_id)
        self._quarantine.expire()
        return len(old)

    def _unindex(self, entry: ViewEntry) -> None:
        for cap, proficiency in entry.proficiencies.items():
            ranked = self._ranked.get(cap)
            if ranked is None:
                continue
            key = (-proficiency, entry.agent_id)
            i = bisect.bisect_left(ranked, key)
            if i < len(ranked) and ranked[i] == key:
                del ranked[i]
            if not ranked:
                del self._ranked[cap]

    def replace_all(self, profiles: Sequence[AgentProfile]) -> None:
        """Forget every entry and load these (a snapshot of the registry)."""
        self._entries.clear()
        self._ranked.clear()
        for profile in profiles:
            if profile.agent_id not in self._quarantine:
                self.upsert(profile)

    # -- keeping fresh -----------------------------------------------------------

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Follow the registry until cancelled, reconnecting with backoff while Redis is away.

        Reports started at once: routing waits on :attr:`ready`, never on Redis.
        """
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._sweep_periodically)
            task_status.started()
            backoff = 0.1
            while True:
                try:
                    await self._follow()
                except (Unavailable, redis.exceptions.RedisError, OSError) as exc:
                    if self.connected:
                        log.warning("registry events lost (%s); routing from the last known view", exc)
                    else:
                        log.debug("registry still unreachable: %s", exc)
                    self.connected = False
                await anyio.sleep(backoff * (1 + random.random()))
                backoff = min(backoff * 2, self.registry.heartbeat_interval)

    async def _follow(self) -> None:
        pubsub = self.registry.pubsub()
        try:
            await pubsub.subscribe(self.registry.keys.events)
            self.replace_all(await self.registry.list_agents())
            self.connected = True
            self.resyncs += 1
            self.ready.set()
            wait = min(1.0, self.registry.heartbeat_interval / 2)
            while True:
                msg = await pubsub.get_message(timeout=wait)
                if msg is not None and msg.get("type") in ("message", b"message"):
                    await self._apply_safely(msg.get("data"))
                for agent_id in self._refetch.due():
                    await self._fetch(agent_id)
        finally:
            with (
                anyio.CancelScope(shield=True),
                anyio.move_on_after(1),
                contextlib.suppress(redis.exceptions.RedisError, OSError),
            ):
                await pubsub.aclose()  # type: ignore[no-untyped-call]

    async def _apply_safely(self, raw: object) -> None:
        """Apply one event; whatever it holds, the loop that follows the registry goes on."""
        try:
            await self._apply(raw)
        except (Unavailable, redis.exceptions.RedisError, OSError):
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
            self.remove(event.id)
            return
        if (
            event.e == "st"
            and event.status is not None
            and self.set_state(event.id, event.status, event.load or 0, event.capacity or 0)
        ):
            return
        if self._refetch.allow(event.id):  # else read once the interval is over
            await self._fetch(event.id)

    async def _fetch(self, agent_id: str) -> None:
        profile = await self.registry.get(agent_id)  # validated there; None if gone or invalid
        if profile is not None and agent_id not in self._quarantine:
            self.upsert(profile)

    async def _sweep_periodically(self) -> None:
        while True:
            await anyio.sleep(self.registry.ttl * (1 + random.random()))
            self.prune()
            try:
                await self.registry.sweep()
            except Unavailable as exc:
                log.debug("sweep failed: %s", exc)
