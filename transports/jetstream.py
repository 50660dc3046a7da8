"""JetStream streams on a NATS transport: create one, read one back. nats-py errors end here."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import nats.errors
import nats.js.errors
from nats.js.api import RawStreamMsg, StorageType, StreamConfig
from nats.js.client import JetStreamContext

from ._match import subject_matches
from ._nats import NatsTransport
from .errors import TransportError

__all__ = ["ensure_stream", "read_stream"]

WINDOW = 64
"""Message-get requests a stream read keeps in flight."""


async def ensure_stream(transport: NatsTransport, name: str, subjects: list[str], *, max_age: float) -> None:
    """Create the file-backed stream ``name`` over ``subjects``, or update it to this configuration.

    Nothing is changed when the stream exists as configured (a user allowed only to look
    at the stream, as agents are, gets no further).

    Raises:
        TransportError: JetStream is not enabled on the server, or it refused the stream.
    """
    config = StreamConfig(name=name, subjects=subjects, storage=StorageType.FILE, max_age=max_age)
    js = transport.nc.jetstream(timeout=2.0)
    try:
        try:  # already there as configured: users who may only look at it are done
            info = await js.stream_info(name)
            if info.config.subjects == subjects and info.config.max_age == max_age:
                return
        except nats.js.errors.NotFoundError:
            pass
        try:
            await js.add_stream(config)
        except nats.js.errors.BadRequestError:
            await js.update_stream(config)  # exists with another configuration
    except (nats.errors.Error, OSError) as exc:
        raise TransportError(str(exc) or type(exc).__name__) from exc


async def read_stream(
    transport: NatsTransport, name: str, subject: str, *, timeout: float = 5.0
) -> AsyncIterator[tuple[str, bytes]]:
    """(subject, data) of every message kept in stream ``name`` on ``subject``, oldest first.

    Messages are fetched by sequence number with the stream's message-get API
    (``$JS.API.STREAM.MSG.GET.<name>``, ``WINDOW`` requests in flight), never through a
    consumer: a user allowed to create consumers could have one deliver the stream onto
    any subject, as if it had published there, so readers get no such right (``a2a
    nats-config``). Messages added after the read started are left out.

    Raises:
        TransportError: no such stream, or the server stopped answering.
    """
    js = transport.nc.jetstream(timeout=timeout)
    try:
        info = await js.stream_info(name)
    except (nats.errors.Error, OSError) as exc:
        raise TransportError(str(exc) or type(exc).__name__) from exc
    if not info.state.messages:
        return
    first, last = max(1, info.state.first_seq), info.state.last_seq
    for start in range(first, last + 1, WINDOW):
        found: list[RawStreamMsg | None] = [None] * (min(start + WINDOW, last + 1) - start)
        failed: list[str] = []
        async with anyio.create_task_group() as tg:
            for i in range(len(found)):
                tg.start_soon(_get, js, name, start, i, found, failed)
        if failed:
            raise TransportError(failed[0])
        for msg in found:
            if msg is not None and msg.subject and subject_matches(subject, msg.subject):
                yield msg.subject, msg.data or b""


async def _get(
    js: JetStreamContext, name: str, start: int, i: int, found: list[RawStreamMsg | None], failed: list[str]
) -> None:
    """Message ``start + i`` of stream ``name`` into ``found[i]``; None when it is gone."""
    try:
        found[i] = await js.get_msg(name, seq=start + i)
    except nats.js.errors.NotFoundError:
        pass  # deleted, or aged out since the read started
    except (nats.errors.Error, OSError) as exc:
        failed.append(str(exc) or type(exc).__name__)
