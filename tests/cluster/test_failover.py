"""The master of a namespace's slot killed under load: registrations come back, calls go on."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import anyio
import pytest
import redis.exceptions
from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from a2a import A2AError, Runtime, Settings, by_capability
from bus.errors import Unavailable
from discovery import LIBRARY, AgentCapability, AgentProfile, InstanceState, Registry
from discovery.cluster import namespace_client
from tests.agents import echo
from tests.cluster.conftest import CLIENT_OPTIONS, RedisCluster, slot_of

pytestmark = [pytest.mark.anyio, pytest.mark.integration, pytest.mark.slow]

INTERVAL = 0.25
"""Heartbeat interval: entries live 0.75 s, so every one expires while the slot has no master."""
FAKES = 20


def cluster_registry(cluster: RedisCluster, namespace: str) -> Registry:
    client = namespace_client(cluster.url, namespace, **CLIENT_OPTIONS)
    return Registry(client, namespace=namespace, heartbeat_interval=INTERVAL)


@dataclass
class Presence:
    """What ``a2a.core.presence.Presence`` does for its hosts, for many fake instances.

    Heartbeat every interval; re-register the ids a heartbeat reports missing; a
    heartbeat that fails (``Unavailable``) waits for the next interval.
    """

    registry: Registry
    profiles: Sequence[AgentProfile]
    failed_in: list[float] = field(default_factory=list)
    """How long each failed heartbeat took, in seconds."""

    async def run(self) -> None:
        await self.registry.register_many(self.profiles)
        by_id = {p.agent_id: p for p in self.profiles}
        while True:
            await anyio.sleep(INTERVAL)
            started = time.monotonic()
            try:
                missing = await self.registry.heartbeat(
                    [InstanceState(p.agent_id, "available", 0, 10) for p in self.profiles]
                )
                if missing:
                    await self.registry.register_many([by_id[i] for i in missing])
            except Unavailable:
                self.failed_in.append(time.monotonic() - started)


@dataclass
class Outcome:
    route: str
    started: float
    ended: float
    error: str | None


async def call_steadily(rt: Runtime, outcomes: list[Outcome]) -> None:
    """Calls by name and by capability, one after the other, until cancelled."""
    while True:
        for name, target in (("name", "echo"), ("capability", by_capability("text"))):
            started = time.monotonic()
            error = None
            try:
                await rt.call(target, "whoami", timeout=3)
            except A2AError as exc:
                error = exc.code
            outcomes.append(Outcome(name, started, time.monotonic(), error))
        await anyio.sleep(0.02)


async def first_write(client: Redis, key: str) -> float:
    """Poll a write every 10 ms (one attempt each, no retry); the time of the first that succeeds."""
    while True:
        try:
            await client.set(key, "1")
            return time.monotonic()
        except redis.exceptions.RedisError:  # not yet
            pass
        await anyio.sleep(0.01)


async def test_the_namespace_master_killed_registrations_return_and_calls_go_on(
    redis_cluster: RedisCluster, nats_url: str, namespace: str
) -> None:
    """Kill -9 the master of the namespace's slot while two runtimes call each other.

    - Calls by name and by capability go on while the slot has no master (routing reads
      the local view), and none fails: not even when the view resyncs from a snapshot
      taken before every instance is registered again (it keeps what the snapshot lacks
      for one interval).
    - Registry calls fail fast meanwhile (within a second each), and the promoted replica
      has the registry's functions (replicated, not loaded again).
    - Once the slot is writable, every registration (20 instances heartbeating as
      ``Presence`` does, and the hosted agent) is back within one heartbeat interval.
    """
    settings = Settings(  # the runtimes reach the cluster by its URL, as a deployment's would
        nats_url=nats_url,
        redis_url=redis_cluster.url,
        namespace=namespace,
        heartbeat_interval=INTERVAL,
        default_timeout=5,
    )
    old = redis_cluster.master_of(slot_of(namespace))
    (replica,) = redis_cluster.replicas_of(old)
    profiles = [
        AgentProfile(
            agent_id=f"fake-{i}",
            name="fake",
            capabilities=[AgentCapability(id="fake", proficiency=0.5)],
            capacity=10,
        )
        for i in range(FAKES)
    ]
    presence = Presence(cluster_registry(redis_cluster, namespace), profiles)
    checker = cluster_registry(redis_cluster, namespace)
    prober = namespace_client(redis_cluster.url, namespace, **CLIENT_OPTIONS, retry=Retry(NoBackoff(), 0))
    outcomes: list[Outcome] = []
    try:
        async with (
            Runtime(settings) as host,
            Runtime(settings) as caller,
            anyio.create_task_group() as tg,
        ):
            (echo_host,) = await host.serve(echo)
            tg.start_soon(presence.run)
            await caller.wait_for_agents(["echo"], timeout=10)
            expected = {p.agent_id for p in profiles} | {echo_host.instance_id}
            await until_registered(checker, expected, timeout=5)
            with anyio.fail_after(5):  # the functions reach the replica by replication, a moment later
                while LIBRARY not in [lib["library_name"] for lib in replica.ask("FUNCTION", "LIST")]:
                    await anyio.sleep(0.05)
            assert caller.view is not None
            view, resyncs = caller.view, caller.view.resyncs
            tg.start_soon(call_steadily, caller, outcomes)
            await anyio.sleep(0.3)

            assert redis_cluster.kill_master_of(namespace) is old
            killed = time.monotonic()
            with anyio.fail_after(20):
                writable = await first_write(prober, f"a2a:{{{namespace}}}:probe")
            present = await until_registered(checker, expected, timeout=5)
            new = await anyio.to_thread.run_sync(redis_cluster.wait_promoted, namespace, old)
            await anyio.sleep(4 * INTERVAL)  # calls after the recovery
            tg.cancel_scope.cancel()

        failed = [o for o in outcomes if o.error is not None]
        print(
            f"kill->writable {writable - killed:.2f}s; writable->all registered {present - writable:.3f}s;"
            f" failed heartbeats took {[round(t, 2) for t in presence.failed_in]}s;"
            f" {len(outcomes)} calls, failed at {[round(o.started - writable, 3) for o in failed]}s"
        )
        assert new is replica
        # Observing costs a 10 ms poll and a round trip or two: 0.1 s of slack.
        assert present - writable <= INTERVAL + 0.1
        assert len(presence.failed_in) >= 2 and max(presence.failed_in) < 1.0

        assert not failed, failed  # by name or by capability, nothing a view can route fails
        assert len([o for o in outcomes if killed < o.started < writable - 0.1]) > 20
        assert view.resyncs > resyncs and view.get(echo_host.instance_id) is not None
    finally:
        await presence.registry.aclose()
        await checker.aclose()
        await prober.aclose()
        if not old.running:
            redis_cluster.rejoin(old)  # from the main thread: the child's death signal is tied to it


async def until_registered(registry: Registry, expected: set[str], *, timeout: float) -> float:
    """Poll until every id in ``expected`` is live in the registry; the time it first was."""
    with anyio.fail_after(timeout):
        while True:
            try:
                if expected <= {p.agent_id for p in await registry.list_agents()}:
                    return time.monotonic()
            except Unavailable:
                pass
            await anyio.sleep(0.01)
