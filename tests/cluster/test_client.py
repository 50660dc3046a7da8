"""``discovery.cluster.namespace_client``: URLs, routing to the slot's master, redirections, failover."""

from __future__ import annotations

import time
from typing import Any

import anyio
import pytest
import redis.exceptions
from redis.asyncio import Redis
from redis.asyncio.client import PubSub

from a2a.dev.servers import ServerError, free_port
from discovery.cluster import (
    SlotMaster,
    SlotMasterConnection,
    SlotMasterNotFound,
    SlotMasterSSLConnection,
    is_cluster_url,
    namespace_client,
    parse_cluster_url,
    parse_slots,
)
from tests.cluster.conftest import CLIENT_OPTIONS, RedisCluster, cluster_url, namespace_on, slot_of

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


def slot_master(client: Redis) -> SlotMaster:
    found = client.connection_pool.connection_kwargs["slot_master"]
    assert isinstance(found, SlotMaster)
    return found


async def served_by(client: Redis) -> int:
    """The port of the node that answered (``INFO server``), through the client's pool."""
    return int((await client.info("server"))["tcp_port"])


def test_cluster_urls_are_recognised_and_parsed() -> None:
    assert is_cluster_url("redis+cluster://h:1") and is_cluster_url("REDISS+CLUSTER://h:1")
    assert not is_cluster_url("redis://h:1/0") and not is_cluster_url("rediss://h:1")
    seeds, options, tls = parse_cluster_url(
        "redis+cluster://us%40er:p%3Ass@10.0.0.1:7000,node-b,[::1]:7002/0?socket_timeout=3"
    )
    assert seeds == [("10.0.0.1", 7000), ("node-b", 6379), ("::1", 7002)] and not tls
    assert options == {"username": "us@er", "password": "p:ss", "socket_timeout": 3.0}
    seeds, options, tls = parse_cluster_url("rediss+cluster://h:1")
    assert (seeds, options, tls) == ([("h", 1)], {}, True)
    for bad in ("redis://h:1", "redis+cluster:///0", "redis+cluster://h:1/1", "redis+cluster://h:99999"):
        with pytest.raises(ValueError):
            parse_cluster_url(bad)
    assert cluster_url([("a", 1), ("::1", 2)], username="u", password="p@") == (
        "redis+cluster://u:p%40@a:1,[::1]:2/0"
    )
    assert parse_cluster_url(cluster_url([("a", 1)], tls=True, password="x"))[2]


async def test_the_client_class_follows_the_scheme_and_options_are_checked() -> None:
    tls = namespace_client("rediss+cluster://127.0.0.1:1", "ns1")
    plain = namespace_client("redis+cluster://127.0.0.1:1", "ns1", ssl=False)
    try:
        assert tls.connection_pool.connection_class is SlotMasterSSLConnection
        assert plain.connection_pool.connection_class is SlotMasterConnection
        assert slot_master(plain).slot == slot_of("ns1")
    finally:
        await tls.aclose()
        await plain.aclose()
    with pytest.raises(TypeError):
        namespace_client("redis+cluster://127.0.0.1:1", "ns1", no_such_option=1)
    with pytest.raises(ValueError):
        namespace_client("redis+cluster://127.0.0.1:1", "not a namespace")
    with pytest.raises(ValueError):
        namespace_client("redis+cluster://127.0.0.1:1", "ns1", db=2)


def test_cluster_slots_replies_are_read_defensively() -> None:
    reply = [
        [0, 99, ["10.0.0.1", 7000, "id1"], ["10.0.0.2", 7001, "id2"]],
        [100, 199, ["", 7002, "id3", []], ["?", 7003, "id4", ["hostname", "", "ip", "10.0.0.4"]]],
        [200, 299, ["?", 7005, "id5", {}]],  # no usable address for that master
    ]
    assert parse_slots(reply, 50, "seed") == (
        ("10.0.0.1", 7000),
        [("10.0.0.1", 7000), ("10.0.0.2", 7001), ("seed", 7002), ("10.0.0.4", 7003)],
    )
    assert parse_slots(reply, 150, "seed")[0] == ("seed", 7002)
    assert parse_slots(reply, 250, "seed")[0] is None
    assert parse_slots(reply, 5000, "seed")[0] is None
    with pytest.raises(TypeError):
        parse_slots("ERR", 1, "seed")


async def test_every_command_reaches_the_master_of_the_namespace_slot(
    redis_cluster: RedisCluster, namespace: str
) -> None:
    """From a single seed that is not that master, the client finds the master and learns the nodes."""
    master = redis_cluster.master_of(slot_of(namespace))
    seed = next(n for n in redis_cluster.live() if n is not master)
    client = namespace_client(cluster_url([seed.address]), namespace, **CLIENT_OPTIONS)
    try:
        async with anyio.create_task_group() as tg:  # several connections at once share one lookup
            for i in range(8):
                tg.start_soon(client.set, f"a2a:{{{namespace}}}:k{i}", str(i))
        assert await served_by(client) == master.port
        assert master.ask("GET", f"a2a:{{{namespace}}}:k7") == "7"
        found = slot_master(client)
        assert found.master == master.address and found.lookups == 1
        masters = {redis_cluster.master_of(s).address for s in (0, 8000, 16000)}
        assert masters <= set(found.learned) and len(masters) == 3
    finally:
        await client.aclose()


async def test_dead_seeds_are_skipped_and_no_live_seed_fails_fast(
    redis_cluster: RedisCluster, namespace: str
) -> None:
    dead = [("127.0.0.1", free_port()), ("127.0.0.1", free_port())]
    live = redis_cluster.live()[0].address
    client = namespace_client(cluster_url([*dead, live]), namespace, **CLIENT_OPTIONS)
    try:
        await client.set(f"a2a:{{{namespace}}}:x", "1")
        assert await served_by(client) == redis_cluster.master_of(slot_of(namespace)).port
        assert slot_master(client).nodes[-2:] == dead  # asked last from now on
    finally:
        await client.aclose()
    nowhere = namespace_client(cluster_url(dead), namespace, **CLIENT_OPTIONS)
    try:
        started = time.monotonic()
        with pytest.raises(SlotMasterNotFound, match=f"no master found for slot {slot_of(namespace)}"):
            await nowhere.get(f"a2a:{{{namespace}}}:x")
        assert time.monotonic() - started < 2.0
        assert issubclass(SlotMasterNotFound, redis.exceptions.ConnectionError)  # Unavailable for callers
    finally:
        await nowhere.aclose()


async def test_a_key_of_another_slot_is_refused_by_name_and_the_client_goes_on(
    redis_cluster: RedisCluster, client: Redis, namespace: str
) -> None:
    master = redis_cluster.master_of(slot_of(namespace))
    other = namespace_on(
        redis_cluster, next(n for n in redis_cluster.live() if n is not master and _is_master(n))
    )
    with pytest.raises(
        redis.exceptions.ResponseError, match=f"slot {slot_of(other)} sent to the client of slot"
    ):
        await client.set(f"a2a:{{{other}}}:x", "1")
    assert await client.set(f"a2a:{{{namespace}}}:x", "1")
    assert slot_master(client).master == master.address


async def test_a_manual_failover_is_followed_without_a_single_error(
    redis_cluster: RedisCluster, client: Redis, namespace: str
) -> None:
    """The old master stays up as a replica and answers MOVED: pooled connections follow at once.

    Plain commands, a pipeline, a script, a WATCH/MULTI transaction and a subscriber all
    carry on; the client never asks the nodes again (the MOVED reply names the new master).
    """
    key, channel = f"a2a:{{{namespace}}}:counter", f"a2a:{{{namespace}}}:events"
    old = redis_cluster.master_of(slot_of(namespace))
    (replica,) = redis_cluster.replicas_of(old)
    pubsub: PubSub = client.pubsub()
    await pubsub.subscribe(channel)
    assert (await pubsub.get_message(timeout=2))["type"] == "subscribe"  # type: ignore[index]
    async with anyio.create_task_group() as tg:  # a few pooled connections to the old master
        for _ in range(4):
            tg.start_soon(client.incr, key)
    lookups = slot_master(client).lookups
    replica.ask("CLUSTER", "FAILOVER")
    await anyio.to_thread.run_sync(_wait_master, redis_cluster, namespace, replica)

    assert await client.incr(key) == 5
    assert await served_by(client) == replica.port
    async with client.pipeline(transaction=False) as pipe:
        pipe.incr(key).get(key)
        assert await pipe.execute() == [6, "6"]
    assert await client.eval("return redis.call('INCR', KEYS[1])", 1, key) == 7
    async with client.pipeline(transaction=True) as pipe:
        await pipe.watch(key)
        value = int(await pipe.get(key))
        pipe.multi()
        pipe.set(key, value + 1)
        assert await pipe.execute() == [True]
    await pubsub.subscribe(channel + "2")  # a subscriber stays where it is: any node delivers
    assert pubsub.connection is not None and pubsub.connection.port == old.port
    await client.publish(channel, "after")  # counts this node's subscribers only: ours is on the old master
    await client.publish(channel + "2", "again")
    assert [(await _next_message(pubsub))["data"] for _ in range(2)] == ["after", "again"]
    await pubsub.aclose()  # type: ignore[no-untyped-call]
    assert replica.ask("GET", key) == "8"
    assert slot_master(client).master == replica.address and slot_master(client).lookups == lookups
    await anyio.to_thread.run_sync(redis_cluster.wait_healthy)


def _is_master(node: Any) -> bool:
    return bool(node.info("replication")["role"] == "master")


def _wait_master(cluster: RedisCluster, namespace: str, node: Any) -> None:
    """Until every live node names ``node`` the master of the namespace's slot."""
    deadline = time.monotonic() + 10
    while True:
        try:
            if cluster.master_of(slot_of(namespace)) is node:
                return
        except ServerError:  # the nodes disagree for a moment
            pass
        assert time.monotonic() < deadline, cluster.describe()
        time.sleep(0.02)


async def _next_message(pubsub: PubSub) -> dict[str, Any]:
    with anyio.fail_after(5):
        while True:
            message = await pubsub.get_message(timeout=1)
            if message is not None and message["type"] == "message":
                return message
