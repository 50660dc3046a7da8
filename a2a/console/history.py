"""The latest calls kept in the audit stream, so that a console started now shows the recent past.

Only the stream's last messages are read (each holds a batch of records), newest first,
by sequence number with the message-get API as ``a2a audit`` reads it, never through a
consumer; and never more than ``MESSAGES`` of them, however long the stream is.
"""

from __future__ import annotations

import logging

import anyio
import nats.errors
import nats.js.errors
from nats.js.api import RawStreamMsg
from nats.js.client import JetStreamContext

from bus.subjects import Subjects
from transports import NatsTransport, Transport

from ..stores.audit import AuditRecord, decode_records

__all__ = ["recent_calls"]

log = logging.getLogger("a2a.console")

MESSAGES = 256
"""Stream messages read at most (the newest)."""
WINDOW = 32
"""Message-get requests in flight at once."""


async def recent_calls(
    transport: Transport, namespace: str, want: int, timeout: float = 3.0
) -> list[AuditRecord]:
    """Up to ``want`` of the newest records kept in ``namespace``'s audit stream, oldest first;
    fewer (logged) when the stream cannot be read within ``timeout``, none without a stream."""
    if not isinstance(transport, NatsTransport):
        return []
    stream = Subjects(namespace).audit_stream
    js = transport.nc.jetstream(timeout=timeout)
    newest_first: list[list[AuditRecord]] = []
    with anyio.move_on_after(timeout):
        try:
            info = await js.stream_info(stream)
        except nats.js.errors.NotFoundError:
            return []  # nothing was audited in this namespace yet
        except (nats.errors.Error, OSError) as exc:
            log.warning("recent calls: %s", str(exc) or type(exc).__name__)
            return []
        first, seq, count = max(1, info.state.first_seq), info.state.last_seq, 0
        while seq >= first and count < want and info.state.last_seq - seq < MESSAGES:
            low = max(first, seq - WINDOW + 1)
            found: list[RawStreamMsg | None] = [None] * (seq - low + 1)
            failed: list[str] = []
            async with anyio.create_task_group() as tg:
                for i in range(len(found)):
                    tg.start_soon(_get, js, stream, low, i, found, failed)
            if failed:
                log.warning("recent calls: %s", failed[0])
                break
            for msg in reversed(found):
                if msg is not None and msg.subject:
                    newest_first.append(decode_records(msg.data or b"", msg.subject))
                    count += len(newest_first[-1])
            seq = low - 1
    records = [r for batch in reversed(newest_first) for r in batch]
    return records[-want:]


async def _get(
    js: JetStreamContext, stream: str, low: int, i: int, found: list[RawStreamMsg | None], failed: list[str]
) -> None:
    """Message ``low + i`` of ``stream`` into ``found[i]``; None when it is gone."""
    try:
        found[i] = await js.get_msg(stream, seq=low + i)
    except nats.js.errors.NotFoundError:
        pass  # deleted, or aged out meanwhile
    except (nats.errors.Error, OSError) as exc:
        failed.append(str(exc) or type(exc).__name__)
