"""The runtime's NATS connection, as its settings describe it, telling the bus what happens."""

from __future__ import annotations

from collections.abc import Callable

from bus import Bus
from bus.subjects import inbox_prefix
from transports import NatsOptions, NatsTransport, TransportEvents

from .settings import Settings

__all__ = ["bus_events", "connect_nats"]


async def connect_nats(
    settings: Settings, *, name: str | None = None, events: TransportEvents = TransportEvents()
) -> NatsTransport:
    """A NATS connection as ``settings`` describe it: servers, credentials, TLS; ``events``
    are told of refused permissions and reconnections.

    Raises:
        TransportError: no server could be reached or authentication failed.
    """
    options = NatsOptions(
        name=name,
        user=settings.nats_user,
        password=settings.nats_password,
        token=settings.nats_token,
        nkeys_seed=settings.nats_nkey_seed,
        creds_file=settings.nats_creds,
        tls=settings.tls_context(),
        connect_wait=settings.connect_timeout,
        inbox_prefix=inbox_prefix(settings.name) if settings.proven else None,
    )
    return await NatsTransport.connect(settings.nats_url, options, events)


def bus_events(bus: Callable[[], Bus | None]) -> TransportEvents:
    """What a connection tells the bus ``bus()`` returns. The connection is made before the
    bus, which exists by the time it has anything to tell (nothing is sent before)."""

    def refused(operation: str, subject: str) -> None:
        found = bus()
        if found is not None:
            found.permission_refused(operation, subject)

    async def reconnected() -> None:
        found = bus()
        if found is not None:
            await found.reconnected()

    return TransportEvents(permission_error=refused, reconnected=reconnected)
