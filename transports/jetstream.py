"""JetStream streams on a NATS transport: create one, read one back. nats-py errors end here."""

from __future__ import annotations

from collections.abc import AsyncIterator

import nats.errors
import nats.js.errors
from nats.js.api import DeliverPolicy, StorageType, StreamConfig

from ._nats import NatsTransport
from .errors import TransportError

__all__ = ["ensure_stream", "read_stream"]


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

    Raises:
        TransportError: no such stream, or the server stopped answering.
    """
    js = transport.nc.jetstream(timeout=timeout)
    try:
        info = await js.stream_info(name)
        if not info.state.messages:
            return
        # Naming the stream spares a lookup ($JS.API.STREAM.NAMES) readers need not be allowed.
        sub = await js.subscribe(
            subject, stream=name, ordered_consumer=True, deliver_policy=DeliverPolicy.ALL
        )
    except (nats.errors.Error, OSError) as exc:
        raise TransportError(str(exc) or type(exc).__name__) from exc
    try:
        while True:
            try:
                msg = await sub.next_msg(timeout=timeout)
            except (nats.errors.Error, OSError) as exc:
                raise TransportError(str(exc) or type(exc).__name__) from exc
            yield msg.subject, msg.data
            if msg.metadata.num_pending == 0:
                break
    finally:
        await sub.unsubscribe()
