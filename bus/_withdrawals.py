"""Cancel notices: how a caller tells callees to stop calls it no longer waits for.

A notice goes to the instance holding the call when the caller knows it (the call was
routed to an instance, or one acknowledged it), else to the target agent's cancel
subject, which only that agent's instances receive; the callee accepts it only from the
sender of the call (``Endpoint.withdraw``). Calls lost together (a dead instance's, found
in one probe round) share one notice per subject instead of one each.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import anyio
import anyio.lowlevel

from ._pending import Reply
from .errors import A2AError
from .link import Link
from .protocol import CANCEL_HEADER, PROBE_IDS, encode_cancels
from .tasks import TaskSet

__all__ = ["Withdrawals"]

log = logging.getLogger("a2a.bus")


class Withdrawals:
    """Publishes cancel notices (best effort, bounded); ``sent`` counts them.

    Args:
        withdraw_local: stops a call this process's own callee half holds (a call that
            was delivered locally never reaches another process's cancel subscription).
        tasks: where notices sent later run.
    """

    def __init__(self, link: Link, withdraw_local: Callable[[str], None], tasks: TaskSet) -> None:
        self._link = link
        self._withdraw_local = withdraw_local
        self._tasks = tasks
        self._later: dict[str, list[str]] = {}
        """Subject -> calls lost in this turn of the event loop."""
        self.sent = 0

    async def now(self, correlation_id: str, slot: Reply) -> None:
        """Tell whoever handles this call to stop."""
        if slot.local:
            self._withdraw_local(correlation_id)
        elif (subject := self._subject(slot)) is not None:
            await self._send(subject, [correlation_id])

    def soon(self, correlation_id: str, slot: Reply) -> None:
        """Withdraw this call with the others withdrawn in this turn: one notice per subject."""
        if slot.local:
            self._withdraw_local(correlation_id)
            return
        subject = self._subject(slot)
        if subject is None:
            return
        if not self._later:
            self._tasks.spawn(self._send_later())
        self._later.setdefault(subject, []).append(correlation_id)

    async def _send_later(self) -> None:
        await anyio.lowlevel.checkpoint()  # calls lost in the same round end in this turn: let them join
        later, self._later = self._later, {}
        for subject, ids in later.items():
            for start in range(0, len(ids), PROBE_IDS):
                await self._send(subject, ids[start : start + PROBE_IDS])

    def _subject(self, slot: Reply) -> str | None:
        """The instance holding the call if known, else its agent's cancel subject (None for a
        subject outside the layout)."""
        subjects = self._link.subjects
        try:
            if slot.instance is not None:
                return subjects.instance(slot.instance)
            if subjects.is_instance(slot.subject):
                return slot.subject
            return subjects.cancel(subjects.agent_of(slot.subject))
        except ValueError as exc:
            log.debug("no subject to withdraw a call to %s: %s", slot.subject, exc)
            return None

    async def _send(self, subject: str, correlation_ids: list[str]) -> None:
        # Instances take a notice by its header; the cancel subject carries nothing else.
        headers = {CANCEL_HEADER: "1"} if self._link.subjects.is_instance(subject) else None
        with anyio.move_on_after(1.0):
            try:
                await self._link.publish(subject, encode_cancels(correlation_ids), headers=headers)
                self.sent += 1
            except A2AError as exc:
                log.debug("could not publish cancel notice: %s", exc)
