"""Taking over the sessions whose owner is gone: its process died, or left without ending them.

A process looks every little while at the sessions of the users it serves
(:meth:`Sessions.serve`, and each user it started a session for) for those whose lease
nobody holds and that have not ended. It claims one (``SET NX`` on the lease: of several
processes looking, one wins), records the adoption in the same compare-and-set as its other
writes (fenced by the lease it now holds), and runs the loop from where it stood: the turns,
the draft waiting for the person, the tokens spent, the failures and the step in flight are
all in the record. The step in flight runs again: the local agent is asked again for the
same turn, or the message sent before is sent again (the remote agent may see it twice; the
turn is marked ``resent``). The adoption goes out on ``session-events`` like any change.

Bounded and fair: a process runs at most ``limit`` adopted loops at once; one pass claims
at most :data:`PER_PASS`, taking the served users in turn (each one's longest-waiting session
first), and passes are jittered, so several processes share a crowd of orphans and one user's
many sessions do not hold back another's. Sessions of users the process does not serve are
never read.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Container, Iterable, Sequence

import anyio
import msgspec

from bus.errors import Unavailable

from .machine import MAX_TRANSITIONS, move, send_again
from .model import TERMINAL, Adoption, Session, Transition
from .store import LeaseLost, NotFound, SessionStore, Unreadable

__all__ = ["PER_PASS", "Adopter", "adopted"]

log = logging.getLogger("a2a.sessions")

PER_PASS = 2
"""Sessions one process claims in one pass, at most."""
SCAN = 100
"""A user's latest sessions looked at in one pass."""
MAX_ADOPTIONS = 20
"""Adoptions a session keeps (the oldest are dropped)."""
_ENDED = 10_000  # ids known to have ended (or to be unreadable), remembered so they are not read again


def adopted(by: str) -> Callable[[Session], Session]:
    """The change that hands a session's loop to ``by``, recorded where it stood."""

    def change(s: Session) -> Session:
        if s.state in TERMINAL:
            return s
        previous = s.owner or "an unknown process"
        record = Adoption(at=time.time(), by=by, previous=previous, state=s.state, rerun=s.in_flight)
        why = f"adopted by {by}: {previous} is gone"
        if s.in_flight == "remote":
            new = send_again(s)
            if new.draft is not None:
                record = msgspec.structs.replace(record, turn=len(new.turns))
                why += "; the message in flight is sent again"
            new = move(new, "ready_to_send", why) if new.state == "waiting_remote" else _noted(new, why)
        elif s.state == "processing_remote":
            new = move(s, "planning", why)
        else:
            if s.in_flight == "local":
                why += "; the local agent is asked again for its draft"
            new = _noted(s, why)
        return msgspec.structs.replace(
            new, owner=by, adoptions=[*s.adoptions[-(MAX_ADOPTIONS - 1) :], record]
        )

    return change


class Adopter:
    """Finds and claims the orphaned sessions of the users this process serves."""

    def __init__(
        self,
        store: SessionStore,
        owner: str,
        *,
        lease: float,
        limit: int,
        launch: Callable[[str], None],
        here: Container[str],
    ) -> None:
        self.store = store
        self.owner = owner
        self.lease = lease
        self.limit = limit
        self.launch = launch
        """Starts the loop of a session just claimed."""
        self.here = here
        """The sessions whose loop runs in this process already."""
        self.users: set[str] = set()
        self.running: set[str] = set()
        """The adopted sessions whose loop runs here (the owner of the loops discards each as it ends)."""
        self._ended: set[str] = set()

    async def run(self, every: float) -> None:
        """Adopt every ``every`` seconds or so, until cancelled."""
        while True:
            await anyio.sleep(every * random.uniform(0.5, 1.0))  # so processes do not look in step
            try:
                await self.adopt()
            except Unavailable as exc:
                log.warning("adopting sessions: %s", exc)

    async def adopt(self) -> list[Session]:
        """One pass: claim and launch what this process may take now; the sessions it adopted."""
        room = min(PER_PASS, self.limit - len(self.running))
        if room <= 0:
            return []
        queues = [await self._orphans(user) for user in sorted(self.users)]
        taken: list[Session] = []
        for session_id in _in_turn(queues):
            if len(taken) >= room:
                break
            session = await self._take(session_id)
            if session is not None:
                log.warning("session %s: adopted from %s", session_id, session.adoptions[-1].previous)
                taken.append(session)
                self.running.add(session_id)
                self.launch(session_id)
        return taken

    async def _orphans(self, user: str) -> list[str]:
        """The user's sessions without an owner that have not ended, the longest-waiting first."""
        if len(self._ended) > _ENDED:
            self._ended.clear()
        found: list[Session] = []
        for session_id in await self.store.unowned(user, SCAN):
            if session_id in self._ended or session_id in self.here:
                continue
            try:
                session = await self.store.get(session_id, user)
            except (NotFound, Unreadable):  # expired, or nothing this version can run
                self._ended.add(session_id)
                continue
            if session.state in TERMINAL:
                self._ended.add(session_id)
                continue
            found.append(session)
        return [s.id for s in sorted(found, key=lambda s: s.updated_at)]

    async def _take(self, session_id: str) -> Session | None:
        if not await self.store.claim(session_id, self.owner, self.lease):
            return None  # another process was quicker
        try:
            session = await self.store.update(session_id, adopted(self.owner), owner=self.owner)
        except (NotFound, Unreadable, LeaseLost):
            session = None
        if session is None or session.state in TERMINAL:
            await self.store.release(session_id, self.owner)
            return None
        return session


def _noted(s: Session, why: str) -> Session:
    """``s`` with a transition to its own state, recording ``why`` (a change of owner)."""
    step = Transition(to=s.state, at=time.time(), source=s.state, why=why)
    return msgspec.structs.replace(s, transitions=[*s.transitions[-(MAX_TRANSITIONS - 1) :], step])


def _in_turn(queues: Sequence[Iterable[str]]) -> Iterable[str]:
    """The first of each queue, then the second of each, and so on."""
    iterators = [iter(q) for q in queues]
    while iterators:
        alive = []
        for it in iterators:
            item = next(it, None)
            if item is not None:
                yield item
                alive.append(it)
        iterators = alive
