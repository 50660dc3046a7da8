"""The audit stream with runtimes on a leaf node that has no JetStream of its own.

nats-server denies the JetStream API (``$JS.API.>``) across a leaf link in an ordinary
account: only a leaf that shares the hub's system account and declares that it extends
the hub's JetStream reaches it. So a runtime on such a site cannot create or look at
the audit stream, and says so once at start; it starts at once all the same, and its
audit records, plain messages on ``a2a.<ns>.audit.<agent>``, cross the link to the stream
the hub keeps. Reading the audit is done on the hub.
"""

from __future__ import annotations

import anyio
import pytest

from a2a import Runtime
from a2a.errors import NoResponders
from a2a.stores.audit import AuditFilter, AuditRecord, read_audit, stream_name
from transports import NatsTransport, TransportError

from .conftest import HUB_AGENT, SITE_AGENT, World, side_settings

pytestmark = [pytest.mark.anyio, pytest.mark.integration, pytest.mark.timeout(30)]


def transport_of(rt: Runtime) -> NatsTransport:
    transport = rt.bus.transport
    assert isinstance(transport, NatsTransport)
    return transport


async def kept(world: World, match: AuditFilter, count: int = 1) -> list[AuditRecord]:
    """The records of the world's namespace the hub's stream keeps that ``match`` accepts."""
    namespace = world.hub.host.settings.namespace
    with anyio.fail_after(3):
        while True:
            records = await read_audit(transport_of(world.hub.caller), namespace, match, timeout=1)
            if len(records) >= count:
                return records
            await anyio.sleep(0.05)


async def test_runtimes_on_the_leaf_start_at_once_without_jetstream(world: World, redis_url: str) -> None:
    namespace = world.hub.host.settings.namespace
    assert world.hub.host.audit.stream == stream_name(namespace)  # created on the hub
    assert world.site.host.audit.stream is None  # the JetStream API does not cross the link
    settings = side_settings(world.topology.leaf_url, redis_url, namespace)
    with anyio.fail_after(1):  # refused at once ("no responders"), not after the API's timeout
        async with Runtime(settings) as rt:
            assert rt.audit.stream is None
            assert (await rt.call(SITE_AGENT, "where", timeout=1))["agent"] == SITE_AGENT


async def test_records_written_on_the_site_are_kept_by_the_hubs_stream(world: World) -> None:
    site_instance = world.site.host.hosts[SITE_AGENT].instance_id
    hub_instance = world.hub.host.hosts[HUB_AGENT].instance_id
    caller = world.site.caller
    await caller.call(SITE_AGENT, "where", timeout=1, conversation_id="on-site")  # stays on the site
    await caller.call(HUB_AGENT, "where", timeout=1, conversation_id="across")  # crosses the link
    with pytest.raises(NoResponders):  # nobody answers: the caller writes the record
        await caller.call("ghost", "where", timeout=1, conversation_id="refused")

    (on_site,) = await kept(world, AuditFilter(conversation_id="on-site"))
    assert (on_site.side, on_site.target, on_site.instance, on_site.outcome) == (
        "callee",
        SITE_AGENT,
        site_instance,
        "ok",
    )
    (across,) = await kept(world, AuditFilter(conversation_id="across"))
    assert (across.side, across.target, across.instance) == ("callee", HUB_AGENT, hub_instance)
    (refused,) = await kept(world, AuditFilter(conversation_id="refused"))
    assert (refused.side, refused.target, refused.error_code) == ("caller", "ghost", "NO_RESPONDERS")


async def test_reading_the_audit_from_the_site_fails_with_a_transport_error(world: World) -> None:
    namespace = world.site.host.settings.namespace
    with anyio.fail_after(1), pytest.raises(TransportError):
        await read_audit(transport_of(world.site.caller), namespace, timeout=1)
