"""The entries of a local view, ranked per capability, and the routing choice over them (no I/O).

Per capability, the ids of the instances offering it, sorted by proficiency: the best
instance for a request is found by reading these lists from the top. The score of an
instance is its match score times its published trust (``discovery.scoring``); trust
is at most 1, so the proficiencies read bound the score of every instance not yet read.

Tasks may wait for a condition on the entries (:meth:`RankedEntries.wait_until`): each
change of the entries wakes them to check it again.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Sequence
from typing import Literal

import anyio

from bus.wire import ELIDING_VERSION

from ._entry import ViewEntry
from .profile import AgentProfile, AgentStatus, reads
from .scoring import match_score
from .trust import check_floor

__all__ = ["TIE_WINDOW", "RankedEntries"]

TIE_WINDOW = 16
"""Equally scored instances compared by load when one capability is asked for."""


class RankedEntries:
    """Instances by id and per capability, and the choice of one for a request.

    An entry stays until it is removed (its instance deregistered or expired): liveness
    is the registry's to judge, not the age of the last news, since an unchanged instance
    sends none.

    Args:
        trust_floor: instances trusted less are never chosen by capability.
    """

    def __init__(self, *, trust_floor: float) -> None:
        self.trust_floor = check_floor(trust_floor)
        self._entries: dict[str, ViewEntry] = {}
        self._ranked: dict[str, list[tuple[float, str]]] = {}
        """Capability -> (-proficiency, instance id), best first."""
        self._per_agent: dict[str, int] = {}
        """Agent name -> how many of its instances are entries."""
        self._full_only: dict[str, int] = {}
        """Agent name -> how many of its instances are sent the full form (they read less than 1.5)."""
        self._changed: anyio.Event | None = None
        """Set at the next change of the entries, while :meth:`wait_until` waits for one."""

    # -- reading ---------------------------------------------------------------

    def entries(self) -> list[ViewEntry]:
        return list(self._entries.values())

    def size(self) -> int:
        """How many instances the entries hold."""
        return len(self._entries)

    def get(self, agent_id: str) -> ViewEntry | None:
        return self._entries.get(agent_id)

    def instances_of(self, agent: str) -> int:
        """How many instances of ``agent`` the entries hold."""
        return self._per_agent.get(agent, 0)

    def reads_compact(self, agent: str, instance: str | None = None) -> bool:
        """Whether a request to ``instance`` (None: to any instance of ``agent``) may go in the
        compact form (``bus.compact``): it announced that it reads 1.5 (without an instance:
        every instance of ``agent`` the entries hold did, and they hold at least one)."""
        if instance is not None:
            entry = self._entries.get(instance)
            return entry is not None and entry.compact
        return agent in self._per_agent and agent not in self._full_only

    def best(
        self,
        capabilities: Sequence[str],
        *,
        exclude: Iterable[str] = (),
        allowed: Callable[[str], bool] | None = None,
    ) -> ViewEntry | None:
        """The instance to route a request needing ``capabilities`` to.

        Highest match score times trust among available instances, ties to the lower
        load. When every capable instance is busy, the best of the busy ones (ties to
        the least loaded: it queues the request). Offline and ``exclude``d
        instances are never chosen, nor instances trusted less than :attr:`trust_floor`,
        nor instances of an agent whose name ``allowed`` rejects (the caller's rights).

        The same threshold search as the registry's script runs over per-capability
        lists ranked by proficiency (an upper bound of the score, trust being at most 1),
        so the usual case reads a handful of entries whatever the registry's size.
        """
        if not capabilities:
            return None
        if len(capabilities) == 1:
            single = self._best_single(capabilities[0], exclude, allowed)
            if single is not None:
                return single
        excluded = set(exclude)
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
                key = self._rank(entry, capabilities, "available")
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
        return chosen or self._least_loaded_busy(capabilities, excluded, allowed)

    def _best_single(
        self, capability: str, exclude: Iterable[str], allowed: Callable[[str], bool] | None
    ) -> ViewEntry | None:
        """The common case of one capability: walk its ranked list, best proficiency first.

        The score is proficiency times trust, so the walk stops at the first proficiency
        under the best score found (no later instance can reach it). Among the first
        ``TIE_WINDOW`` available instances of the best score, the least loaded wins
        (as the Redis script compares a batch), so the walk costs the same with ten
        replicas or ten thousand. None when no available instance has the capability
        (the general search then looks at busy ones).
        """
        floor = self.trust_floor
        chosen: ViewEntry | None = None
        chosen_load = 0.0
        top = 0.0
        ties = 0
        for neg_proficiency, agent_id in self._ranked.get(capability, ()):
            proficiency = -neg_proficiency
            if chosen is not None and (proficiency < top or (proficiency == top and ties >= TIE_WINDOW)):
                break
            if proficiency <= 0.0 or agent_id in exclude:
                continue  # proficiency 0 never matches
            entry = self._entries[agent_id]
            profile = entry.profile
            if profile.status != "available":
                continue
            trust = entry.trust
            if trust < floor or (allowed is not None and not allowed(profile.name)):
                continue
            score = proficiency * trust
            if score <= 0.0:
                continue
            load = profile.load / profile.capacity if profile.capacity > 0 else 0.0
            if chosen is None or score > top:
                chosen, chosen_load, top, ties = entry, load, score, 1
            elif score == top:
                ties += 1
                if load < chosen_load:
                    chosen, chosen_load = entry, load
        return chosen

    def find_agents_with_capability(self, capability: str) -> list[AgentProfile]:
        """Every available instance offering ``capability`` and trusted at least the floor.

        Best proficiency times trust first (equal ones by proficiency).
        """
        found = []
        for neg_proficiency, agent_id in self._ranked.get(capability, ()):
            entry = self._entries[agent_id]
            trust = entry.trust
            if entry.profile.status == "available" and trust >= self.trust_floor:
                found.append((neg_proficiency * trust, entry.profile))
        found.sort(key=lambda pair: pair[0])  # stable: by proficiency among equals
        return [profile for _, profile in found]

    def _least_loaded_busy(
        self,
        capabilities: Sequence[str],
        excluded: set[str],
        allowed: Callable[[str], bool] | None,
    ) -> ViewEntry | None:
        """Every capable instance is busy (rare): the best of them, ties to the lower load."""
        best: tuple[float, float] | None = None
        chosen: ViewEntry | None = None
        ids = {agent_id for cap in capabilities for _, agent_id in self._ranked.get(cap, ())}
        for agent_id in ids - excluded:
            entry = self._entries[agent_id]
            key = self._rank(entry, capabilities, "busy")
            if (
                key is not None
                and (best is None or key > best)
                and (allowed is None or allowed(entry.profile.name))
            ):
                best, chosen = key, entry
        return chosen

    def _rank(
        self, entry: ViewEntry, capabilities: Sequence[str], status: AgentStatus
    ) -> tuple[float, float] | None:
        """(score, -load ratio) of an entry in ``status`` trusted at least the floor that
        matches at all, else None; the score is the match score times trust."""
        if entry.profile.status != status:
            return None
        trust = entry.trust
        if trust < self.trust_floor:
            return None
        score = match_score(entry.proficiencies, capabilities) * trust
        return (score, -entry.load_ratio) if score > 0 else None

    async def wait_until(self, condition: Callable[[], bool]) -> None:
        """Return once ``condition()`` is true: it is checked now, then after each change of
        the entries (one added, replaced or removed, or its state set by :meth:`set_state`)."""
        while not condition():
            if self._changed is None:
                self._changed = anyio.Event()
            await self._changed.wait()

    # -- writing ---------------------------------------------------------------

    def _notify(self) -> None:
        """Wake the tasks in :meth:`wait_until`: the entries changed."""
        changed, self._changed = self._changed, None
        if changed is not None:
            changed.set()

    def upsert(self, profile: AgentProfile) -> None:
        """Add or replace an entry (own instances are applied at once, not via Redis)."""
        self._notify()
        old = self._entries.get(profile.agent_id)
        if old is not None:
            self._unindex(old)
            self._count(old.profile.name, -1, old.compact)
        entry = ViewEntry(profile, profile.proficiencies(), reads(profile.protocol_version, ELIDING_VERSION))
        self._count(profile.name, 1, entry.compact)
        self._entries[profile.agent_id] = entry
        for cap, proficiency in entry.proficiencies.items():
            bisect.insort(self._ranked.setdefault(cap, []), (-proficiency, profile.agent_id))

    def set_state(
        self,
        agent_id: str,
        status: AgentStatus,
        load: int,
        capacity: int,
        trust: float | Literal["keep"] | None = "keep",
    ) -> bool:
        """Apply a heartbeat; False when the instance is unknown.

        ``trust``: the instance's published trust (None: it publishes none); by default
        the entry's trust is left as it is.
        """
        entry = self._entries.get(agent_id)
        if entry is None:
            return False
        self._notify()
        entry.profile.status = status
        entry.profile.load = load
        entry.profile.capacity = capacity
        if trust != "keep":
            entry.profile.trust = trust
        return True

    def remove(self, agent_id: str) -> None:
        entry = self._entries.pop(agent_id, None)
        if entry is not None:
            self._notify()
            self._unindex(entry)
            self._count(entry.profile.name, -1, entry.compact)

    def clear(self) -> None:
        self._notify()
        self._entries.clear()
        self._ranked.clear()
        self._per_agent.clear()
        self._full_only.clear()

    def _count(self, agent: str, step: int, compact: bool) -> None:
        for counts in (self._per_agent,) if compact else (self._per_agent, self._full_only):
            n = counts.get(agent, 0) + step
            if n > 0:
                counts[agent] = n
            else:
                counts.pop(agent, None)

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
