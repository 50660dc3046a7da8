"""What an endpoint remembers of the calls runtimes sent it, by the calls' reply subjects.

A runtime's call has a reply subject of its own (``<reply prefix><requestId>``). For the
last REPLY_CACHE_SIZE of them an endpoint keeps:

- the reply sent, or None while the call waits to be handled or runs: a call sent again
  after a lost connection is answered from here, or left to its first handling, never run
  twice; and a caller asking about a call that waits is told it arrived (acknowledged);
- the acks sent for a call before it was held, which count on its reply subject;
- under generated permissions, the runtimes whose calls arrived before this process's
  connection was lost: the server lets a receiver answer only on the connection that
  received the request, so those runtimes are asked to send their calls again
  (``A2A-Resend`` on the answer to their probes), which grants the new connection.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable

from .protocol import PROBE_EVERY, REPLY_CACHE_SIZE

__all__ = ["Received"]


class Received:
    """Calls received from runtimes, by reply subject (oldest first, bounded)."""

    def __init__(self) -> None:
        self._replies: dict[str, bytes | None] = {}
        """Reply subject -> the reply sent (None while waiting or in progress; b"" when too
        large to keep)."""
        self._acks: dict[str, tuple[int, float]] = {}
        """Reply subject of a call acknowledged before it was held -> (acks sent, when the last)."""
        self.stale: set[str] = set()
        """Reply prefixes of runtimes to ask to send their calls again (see the module)."""
        self._limit = REPLY_CACHE_SIZE + REPLY_CACHE_SIZE // 8
        """How many calls may be remembered before the oldest answered ones are forgotten."""

    def arrived(self, reply: str) -> bool:
        """Note a call on ``reply``; False when it arrived before (a repeat)."""
        replies = self._replies
        if reply in replies:
            return False
        replies[reply] = None
        if len(replies) > self._limit:
            self._forget_oldest()
        return True

    def _forget_oldest(self) -> None:
        """Forget the oldest eighth of the calls answered (at once: cheaper than one eviction
        per message). Calls still waiting or running stay, however many others arrived since
        (as many as the agent holds and queues): sent again after a reconnect, one must find
        its first handling, never run twice. Only past twice the size, with that many
        waiting, do the oldest of those go too."""
        replies, share = self._replies, REPLY_CACHE_SIZE // 8
        gone = [r for r, data in itertools.islice(replies.items(), 4 * share) if data is not None][:share]
        if len(replies) - len(gone) > 2 * REPLY_CACHE_SIZE:
            gone = list(itertools.islice(replies, share))
        for old in gone:
            del replies[old]
        self._limit = max(REPLY_CACHE_SIZE, len(replies)) + share  # the next look after as many calls

    def reply(self, reply: str) -> bytes | None:
        """The reply sent to the call on ``reply``: None while in progress, b"" when not kept."""
        return self._replies.get(reply)

    def answered(self, reply: str, data: bytes | None) -> None:
        """The call on ``reply`` was answered with ``data`` (None: too large to keep)."""
        if reply in self._replies:
            self._replies[reply] = b"" if data is None else data
            if self._acks:
                self._acks.pop(reply, None)  # answered without being held (refused)

    def forget(self, reply: str) -> None:
        """Forget the call on ``reply``: if it arrives again, it is handled again."""
        self._replies.pop(reply, None)

    def ack_waiting(self, reply: str, now: float, limit: int | None) -> bool:
        """Whether to acknowledge the call on ``reply`` as waiting to be handled (and count it):
        it arrived, has no reply yet, was not acknowledged within PROBE_EVERY, and got fewer
        than ``limit`` acks (None: no limit)."""
        if reply not in self._replies or self._replies[reply] is not None:
            return False
        acks = self._acks
        count, at = acks.get(reply, (0, now - PROBE_EVERY))
        if now - at < PROBE_EVERY or (limit is not None and count >= limit):
            return False
        acks[reply] = (count + 1, now)
        if len(acks) > REPLY_CACHE_SIZE:
            del acks[next(iter(acks))]
        return True

    def take_acks(self, reply: str) -> tuple[int, float] | None:
        """(acks sent, when the last) for a call acknowledged while it waited, now held."""
        return self._acks.pop(reply, None) if self._acks else None

    def lost_connection(self, held: Iterable[str], runtime_of: Callable[[str], str | None]) -> None:
        """The connection was lost: the runtimes of calls held (reply subjects ``held``) or
        waiting must send them again before they can be answered."""
        waiting = (reply for reply, done in self._replies.items() if done is None)
        for reply in itertools.chain(held, waiting):
            prefix = runtime_of(reply)
            if prefix is not None:
                self.stale.add(prefix)
