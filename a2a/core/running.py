"""Records of calls still running, so that a person watching sees a long call while it runs.

A call's audit record is made when it ends. Every ``RUNNING_AFTER`` seconds this runtime
looks at the calls its agents hold, and each one that has run that long gets one record
with the outcome ``running`` (its request id, the callers, the time so far), published on
``a2a.<ns>.running.<agent>`` and kept nowhere. Calls that end sooner cost nothing here:
most calls end before anyone could watch them run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import anyio

from ..stores.audit import AuditLog, callee_record
from .hosting import AgentHost
from .slots import Lease

__all__ = ["RUNNING_AFTER", "announce_running"]

RUNNING_AFTER = 0.5
"""Seconds a call runs before it is announced (and the interval between two looks)."""


async def announce_running(
    hosts: Mapping[str, AgentHost],
    audit: AuditLog,
    clock: Callable[[], float],
    after: float = RUNNING_AFTER,
) -> None:
    """Announce, until cancelled, each call held longer than ``after`` seconds, once.

    ``hosts`` are the agent instances of this runtime, read afresh at every look.
    """
    announced: set[str] = set()
    while True:
        await anyio.sleep(after)
        now = clock()
        still: set[str] = set()
        for host in list(hosts.values()):
            if host.endpoint is None:
                continue
            for key, lease in host.endpoint.held.items():
                if not isinstance(lease, Lease) or lease.request is None or now - lease.started < after:
                    continue
                still.add(key)
                if key not in announced:
                    seconds = now - lease.started
                    record = callee_record(lease.request, host.agent.name, host.instance_id, seconds, None)
                    record.outcome = "running"
                    audit.emit(record)
        announced = still
