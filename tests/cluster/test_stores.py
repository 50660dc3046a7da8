"""The registry, its local view and every Redis store of a namespace, on a Redis Cluster.

Each goes through ``namespace_client``, unchanged: FCALL pipelines, EVAL scripts,
WATCH/MULTI transactions and pub/sub, all on the master of the namespace's slot.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import anyio
import msgspec
import pytest
from redis.asyncio import Redis

from a2a.cli.redis_config import load_functions
from a2a.gateway.tasks import Numbered, StoredTask, TaskStore
from a2a.sessions import Session
from a2a.sessions.policy import PolicyStore, SharedCallPolicy
from a2a.sessions.store import AuditEntry, SessionStore
from a2a.stores.history import Exchange, HistoryStore, Interaction
from bus.errors import Overloaded, PermissionDenied
from bus.handoff import ChatMessage
from discovery import LIBRARY, AgentCapability, AgentProfile, InstanceState, LocalView, Registry
from discovery.cluster import namespace_client
from tests.cluster.conftest import CLIENT_OPTIONS, RedisCluster, namespace_on, slot_of
from transports.a2a_http import StreamResponse, Task, TaskStatus, TaskStatusUpdateEvent

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


def profile(
    agent_id: str, caps: dict[str, float], *, status: str = "available", load: int = 0
) -> AgentProfile:
    return AgentProfile(
        agent_id=agent_id,
        name=agent_id.split("-")[0],
        capabilities=[AgentCapability(id=c, proficiency=p) for c, p in caps.items()],
        status=status,  # type: ignore[arg-type]
        load=load,
        capacity=10,
    )


async def until(check: Callable[[], Any], timeout: float = 5.0) -> None:
    """Poll ``check`` (sync or async) until it is true; fail after ``timeout`` seconds."""
    with anyio.fail_after(timeout):
        while True:
            result = check()
            if hasattr(result, "__await__"):
                result = await result
            if result:
                return
            await anyio.sleep(0.01)


async def test_the_registry_on_the_master_of_its_slot(
    redis_cluster: RedisCluster, registry: Registry
) -> None:
    master = redis_cluster.master_of(slot_of(registry.namespace))
    await registry.register_many(
        [
            profile("coder-1", {"code": 0.9, "review": 0.4}),
            profile("coder-2", {"code": 0.6}),
            profile("reader-1", {"read": 0.8}),
        ]
    )
    assert {p.agent_id for p in await registry.list_agents()} == {"coder-1", "coder-2", "reader-1"}
    got = await registry.get("coder-1")
    assert got is not None and got.proficiencies() == {"code": 0.9, "review": 0.4}
    assert await registry.get("nobody-1") is None
    best = await registry.find_best_agent(["code", "review"])
    assert best is not None and (best.agent_id, best.score) == ("coder-1", pytest.approx(0.65))
    assert [p.agent_id for p in await registry.find_agents_with_capability("code")] == ["coder-1", "coder-2"]

    missing = await registry.heartbeat(
        [InstanceState("coder-1", "busy", 10, 10), InstanceState("ghost-1", "available", 0, 10)]
    )
    assert missing == ["ghost-1"]
    best = await registry.find_best_agent(["code"])
    assert best is not None and best.agent_id == "coder-2"
    assert [p.agent_id for p in await registry.find_agents_with_capability("code")] == ["coder-2"]
    await registry.deregister("coder-2")
    assert await registry.find_best_agent(["code"]) is None  # the only other one is busy
    assert {p.agent_id for p in await registry.list_agents()} == {"coder-1", "reader-1"}

    # Everything lives on that master, the library included (loaded there on first use).
    assert master.ask("SISMEMBER", registry.keys.instances, "coder-1") == 1
    assert LIBRARY in [lib["library_name"] for lib in master.ask("FUNCTION", "LIST")]

    # No heartbeats: both expire (ttl 0.6 s); a sweep prunes them from the indexes.
    await until(lambda: _none_left(registry), timeout=3)
    assert await registry.sweep() == 2
    assert master.ask("SCARD", registry.keys.instances) == 0
    assert await registry.sweep() == 0


async def _none_left(registry: Registry) -> bool:
    return await registry.get("coder-1") is None and await registry.get("reader-1") is None


def _role(node: Any) -> str:
    return str(node.info("replication")["role"])


async def test_a_local_view_follows_the_events_and_resyncs_after_losing_its_subscription(
    redis_cluster: RedisCluster, registry: Registry
) -> None:
    await registry.register(profile("early-1", {"x": 0.5}))
    view = LocalView(registry)
    async with anyio.create_task_group() as tg:
        await tg.start(view.run)
        await until(view.ready.is_set)
        assert view.get("early-1") is not None and view.resyncs == 1
        await registry.register(profile("late-1", {"x": 0.9}))  # a ``reg`` event
        await until(lambda: view.get("late-1") is not None)
        entry = view.best(["x"])
        assert entry is not None and entry.agent_id == "late-1"
        await registry.deregister("late-1")  # a ``down`` event
        await until(lambda: view.get("late-1") is None)

        for node in redis_cluster.live():  # cut every subscriber off: the view subscribes again
            node.ask("CLIENT", "KILL", "TYPE", "pubsub")
        await registry.register(profile("meanwhile-1", {"x": 0.7}))
        await until(lambda: view.resyncs >= 2 and view.connected)
        await until(lambda: view.get("meanwhile-1") is not None)
        await registry.deregister("early-1")
        await until(lambda: view.get("early-1") is None)
        assert view.rejected == 0
        tg.cancel_scope.cancel()


async def test_two_namespaces_on_different_masters_both_work(redis_cluster: RedisCluster) -> None:
    masters = [n for n in redis_cluster.live() if _role(n) == "master"][:2]
    namespaces = [namespace_on(redis_cluster, m, prefix="two") for m in masters]
    registries = [
        Registry(
            namespace_client(redis_cluster.url, ns, **CLIENT_OPTIONS), namespace=ns, heartbeat_interval=0.5
        )
        for ns in namespaces
    ]
    try:
        for i, reg in enumerate(registries):
            await reg.register(profile(f"agent{i}-1", {"shared": 0.5 + i / 10}))
        for i, (reg, master) in enumerate(zip(registries, masters, strict=True)):
            assert [p.agent_id for p in await reg.list_agents()] == [f"agent{i}-1"]
            best = await reg.find_best_agent(["shared"])
            assert best is not None and best.agent_id == f"agent{i}-1"
            assert int((await reg.redis.info("server"))["tcp_port"]) == master.port
            assert master.ask("EXISTS", reg.keys.instance(f"agent{i}-1")) == 1
            assert LIBRARY in [lib["library_name"] for lib in master.ask("FUNCTION", "LIST")]
    finally:
        for reg in registries:
            await reg.aclose()


async def test_the_functions_are_loaded_on_every_master_by_the_admin_command(
    redis_cluster: RedisCluster,
) -> None:
    masters = [n for n in redis_cluster.live() if _role(n) == "master"]
    for master in masters:
        master.ask("FUNCTION", "FLUSH")
    await load_functions(redis_cluster.url)  # what `a2a redis-config --load` runs
    assert len(masters) == 3
    for master in masters:
        assert LIBRARY in [lib["library_name"] for lib in master.ask("FUNCTION", "LIST")]


async def test_history_store(client: Redis, namespace: str) -> None:
    history = HistoryStore(client, namespace, max_messages=3)
    await history.claim("c1", "alice")
    await history.claim("c1", "alice")  # the owner again
    with pytest.raises(PermissionDenied):
        await HistoryStore(client, namespace).claim("c1", "mallory")  # a fresh store asks Redis
    assert await history.owner("c1") == "alice"
    await history.append("c1", *(ChatMessage(role="user", content=f"m{i}") for i in range(5)))
    assert [m.content for m in await history.messages("c1")] == ["m2", "m3", "m4"]
    await history.set_summary("c1", "short")
    assert await history.summary("c1") == "short"
    # Batches: one FCALL each, on the master of the namespace's slot.
    asked = ChatMessage(role="user", content="goal")
    appended = await history.append_exchanges(
        [
            Exchange(
                conversation_id="c2",
                user_id="bob",
                request=asked,
                answer=ChatMessage(role="assistant", content="ok"),
            )
        ]
    )
    assert appended.lengths == {"c2": 2}
    (inputs,) = await history.summary_inputs(["c2"], 5)
    assert inputs.goal == "goal" and [m.content for m in inputs.messages] == ["goal", "ok"]
    assert await history.set_summaries([("c2", "a batch", 1)]) == 1
    assert await history.summary("c2") == "a batch"
    call = Interaction(
        caller="a", target="b", task="task", output_preview="out", success=True,
        duration_ms=1.5, request_id="r1", at=time.time(),
    )  # fmt: skip
    await history.record("c1", call)
    assert [(i.caller, i.request_id) for i in await history.interactions("c1")] == [("a", "r1")]
    assert await history.start_objective("k", "r1", 5000) is None
    assert await history.start_objective("k", "r2", 5000) == "r1"
    await history.finish_objective("k", "r2")  # not the holder: nothing happens
    assert await history.start_objective("k", "r3", 5000) == "r1"
    await history.finish_objective("k", "r1")
    assert await history.start_objective("k", "r3", 5000) is None


def session(session_id: str) -> Session:
    return Session(
        id=session_id,
        user_id="alice",
        profile_id="drafter",
        remote="remote",
        objective="review",
        started_at=time.time(),
    )


async def test_session_store_cas_leases_events_and_audit(client: Redis, namespace: str) -> None:
    store = SessionStore(client, namespace)
    async with store.events() as events:
        await store.create(session("s1"))

        async def bump(n: int) -> None:
            await store.update("s1", lambda s: msgspec_replace(s, failures=s.failures + 1))

        async with anyio.create_task_group() as tg:  # concurrent CAS writers: no update lost
            for n in range(10):
                tg.start_soon(bump, n)
        got = await store.get("s1", "alice")
        assert (got.failures, got.version) == (10, 10)
        with anyio.fail_after(5):
            seen = [await anext(events) for _ in range(11)]
        assert [e.session.version for e in seen] == list(range(11))

    assert await store.claim("s1", "owner-a", 5.0)
    assert not await store.claim("s1", "owner-b", 5.0)
    assert await store.claim("s1", "owner-a", 5.0)  # renewed by a script
    await store.release("s1", "owner-b")  # not the holder's: no effect
    assert await store.owned("s1")
    await store.release("s1", "owner-a")
    assert not await store.owned("s1")
    assert await store.claim("s1", "owner-b", 0.2)
    await until(lambda: _not(store.owned("s1")), timeout=3)  # a lease lapses by itself

    entry = AuditEntry(
        at=1.0, session_id="s1", profile_id="drafter", target="remote", user_id="alice",
        turn_index=0, mode="manual", event="sent", status="ok",
    )  # fmt: skip
    await store.audit(entry)
    await store.audit(msgspec_replace(entry, user_id="bob"))
    assert await store.audit_entries("drafter", "alice") == [entry]
    assert [s.id for s in await store.of_user("alice")] == ["s1"]


async def _not(pending: Any) -> bool:
    return not await pending


def msgspec_replace(struct: Any, **changes: Any) -> Any:
    return msgspec.structs.replace(struct, **changes)


async def test_policy_store_rate_and_concurrency_scripts(client: Redis, namespace: str) -> None:
    policies = PolicyStore(client, namespace)
    policy = SharedCallPolicy(
        allow_shared_agent_calls=True,
        allowed_shared_device_ids=["remote"],
        max_concurrent_shared_calls=2,
        max_calls_per_minute=3,
    )
    await policies.set("alice", "drafter", policy)
    assert await policies.get("alice", "drafter") == policy
    assert await policies.get("bob", "drafter") == SharedCallPolicy()
    if time.time() % 60 > 57:  # the rate counts per minute of the clock: start a fresh minute
        await anyio.sleep(60 - time.time() % 60 + 0.05)
    async with (
        policies.admit(policy, "alice", "drafter", "remote"),
        policies.admit(policy, "alice", "drafter", "remote"),
    ):
        with pytest.raises(Overloaded, match="shared calls in flight"):
            async with policies.admit(policy, "alice", "drafter", "remote"):
                pass
    async with policies.admit(policy, "alice", "drafter", "remote"):  # slots released; 3rd of 3
        pass
    with pytest.raises(Overloaded, match="this minute"):
        async with policies.admit(policy, "alice", "drafter", "remote"):
            pass
    async with policies.admit(policy, "bob", "drafter", "remote"):  # counted per user
        pass


def task(task_id: str, state: str) -> Task:
    return Task(id=task_id, context_id="ctx", status=TaskStatus(state=state))  # type: ignore[arg-type]


async def test_gateway_task_store(client: Redis, namespace: str) -> None:
    tasks = TaskStore(client, namespace)
    event = StreamResponse(
        status_update=TaskStatusUpdateEvent(
            task_id="t1", context_id="ctx", status=TaskStatus(state="TASK_STATE_COMPLETED")
        )
    )
    async with tasks.listen(tasks.events_channel("t1"), tasks.cancel_channel) as pubsub:
        await tasks.save(StoredTask(task=task("t1", "TASK_STATE_WORKING"), owner="alice", replica="r1"))
        await tasks.save(StoredTask(task=task("t2", "TASK_STATE_WORKING"), owner="alice", replica="r1"))
        await anyio.sleep(0.002)  # tasks are listed by the millisecond of their last change
        await tasks.save(
            StoredTask(task=task("t1", "TASK_STATE_COMPLETED"), owner="alice", replica="r1"),
            Numbered(1, event),
        )
        await tasks.request_cancel("t2")
        received = []
        with anyio.fail_after(5):
            while len(received) < 2:
                message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=1)
                if message is not None:
                    received.append((message["channel"], message["data"]))
    assert (tasks.events_channel("t1"), Numbered(1, event)) == (
        received[0][0],
        TaskStore.decode_event(received[0][1]),
    )
    assert await tasks.events_after("t1", 0) == [Numbered(1, event)]  # and logged
    assert await tasks.events_after("t1", 1) == []
    assert received[1] == (tasks.cancel_channel, "t2")
    loaded = await tasks.load("t1")
    assert loaded is not None and loaded.task.status.state == "TASK_STATE_COMPLETED"
    page, total, following = await tasks.page("alice", offset=0, size=1)
    assert ([s.task.id for s in page], total, following) == (["t1"], 2, 1)
    page, total, _ = await tasks.page("alice", offset=0, size=10, state="TASK_STATE_WORKING")
    assert ([s.task.id for s in page], total) == (["t2"], 1)
    await tasks.alive("r1", 5.0)
    assert await tasks.is_alive("r1")
    await tasks.gone("r1")
    assert not await tasks.is_alive("r1")
