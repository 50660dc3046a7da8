"""Which form a caller in "auto" (the default) sends, through a real nats-server and Redis:
compact to agents whose every instance announces 1.5 in the registry, full to the others,
and the full form again, once, after an older runtime refuses a compact request."""

from __future__ import annotations

from typing import Any

import anyio
import msgspec
import pytest
import redis.asyncio as aioredis

from a2a import Agent, AgentCapability, Context, Runtime, Settings, by_capability, by_instance
from a2a.core import hosting
from a2a.errors import A2AError
from bus import codec
from bus.answers import error_to
from bus.compact import full_path, is_compact
from bus.errors import InvalidEnvelope
from bus.wire import Envelope
from discovery import AgentProfile
from transports import Message, NatsTransport

pytestmark = pytest.mark.anyio


def _agent(name: str, capability: str) -> tuple[Agent, list[dict[str, Any]]]:
    """An echo agent that says which version it read, and the calls its handler ran."""
    agent = Agent(name, capabilities=[AgentCapability(id=capability)])
    ran: list[dict[str, Any]] = []

    @agent.action("run")
    async def _run(ctx: Context, params: dict[str, Any]) -> Any:
        ran.append(params)
        return {**params, "version": ctx.request.protocol_version}

    return agent, ran


class Wire:
    """The requests nats-server carries to one agent's subjects, as bytes."""

    def __init__(self, namespace: str, agent: str) -> None:
        self.namespace, self.agent = namespace, agent
        self.requests: list[bytes] = []

    async def __call__(self, msg: Message) -> None:
        if f".agent.{self.agent}." in msg.subject or f".inst.{self.agent}." in msg.subject:
            self.requests.append(msg.data)

    def forms(self) -> list[str]:
        return ["compact" if data.startswith(b'{"t":"q"') else "full" for data in self.requests]


async def _watch(settings: Settings, agent: str) -> tuple[NatsTransport, Wire]:
    observer = await NatsTransport.connect(settings.nats_url)
    wire = Wire(settings.namespace, agent)
    await observer.subscribe(f"a2a.{settings.namespace}.>", wire)
    await observer.flush()
    return observer, wire


async def _records(settings: Settings) -> dict[str, str]:
    """Agent name -> its instance's registry record (the profile JSON as stored)."""
    client = aioredis.Redis.from_url(settings.redis_url or "", decode_responses=True)
    try:
        keys = [k async for k in client.scan_iter(f"a2a:{{{settings.namespace}}}:inst:*")]
        profiles = [await client.hget(k, "profile") for k in keys]
    finally:
        await client.aclose()
    return {msgspec.json.decode(p)["name"]: p for p in profiles if p}


def _before_1_4(profile: AgentProfile) -> AgentProfile:
    """The record a runtime before 1.4 wrote: no protocolVersion."""
    fields = msgspec.to_builtins(profile)
    del fields["protocolVersion"]
    return msgspec.convert(fields, AgentProfile)


def _at_1_4(profile: AgentProfile) -> AgentProfile:
    """The record a runtime of 1.4 wrote."""
    return msgspec.structs.replace(profile, protocol_version="1.4")


async def test_auto_sends_compact_to_agents_announcing_1_5_and_full_to_older_ones(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1.5 readers get the compact form without the conversation id (a new conversation's is
    its call tree's); a 1.4 reader, which requires it, and one before 1.4 get the full form."""
    new, _ = _agent("echo", "test.new")
    old, _ = _agent("older", "test.old")
    mid, _ = _agent("mid", "test.mid")
    announce = hosting.AgentHost.profile

    def as_older(host: hosting.AgentHost) -> Any:
        profile = announce(host)
        name = host.agent.name
        return _before_1_4(profile) if name == "older" else _at_1_4(profile) if name == "mid" else profile

    monkeypatch.setattr(hosting.AgentHost, "profile", as_older)
    observer, wire = await _watch(settings, "echo")
    old_wire, mid_wire = Wire(settings.namespace, "older"), Wire(settings.namespace, "mid")
    await observer.subscribe(f"a2a.{settings.namespace}.>", old_wire)
    await observer.subscribe(f"a2a.{settings.namespace}.>", mid_wire)
    await observer.flush()
    try:
        async with Runtime(settings) as server, Runtime(settings) as client:
            assert client.settings.peer_protocol == "auto"
            await server.serve(new, old, mid)
            await client.wait_for_agents(["echo", "older", "mid"], timeout=10)
            records = await _records(settings)
            assert '"protocolVersion":"1.5"' in records["echo"]
            assert '"protocolVersion":"1.4"' in records["mid"]
            assert "protocolVersion" not in records["older"]
            assert (await client.call("echo", "run", {"n": 1}))["version"] == "1.4"
            assert (await client.call(by_capability("test.new"), "run", {"n": 2}))["version"] == "1.4"
            for agent, capability in (("older", "test.old"), ("mid", "test.mid")):
                assert (await client.call(agent, "run", {"n": 3}))["version"] == "1.3"
                assert (await client.call(by_capability(capability), "run", {"n": 4}))["version"] == "1.3"
            await observer.flush()
            assert client.bus.caller.forms.resent == 0
    finally:
        await observer.aclose()
    assert wire.forms() == ["compact", "compact"]
    assert all(b'"c":' not in data for data in wire.requests)
    assert old_wire.forms() == mid_wire.forms() == ["full", "full"]


async def test_one_older_instance_keeps_calls_to_its_agent_by_name_in_the_full_form(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """By name, any instance may take the call: full while one of them reads only 1.3. By
    capability the call goes to one instance: compact when that one reads 1.4."""
    agent, _ = _agent("mixed", "test.mixed")
    announce = hosting.AgentHost.profile
    older_runtimes: set[str] = set()

    def some_before_1_4(host: hosting.AgentHost) -> Any:
        profile = announce(host)
        return _before_1_4(profile) if (profile.metadata or {}).get("runtime") in older_runtimes else profile

    monkeypatch.setattr(hosting.AgentHost, "profile", some_before_1_4)
    observer, wire = await _watch(settings, "mixed")
    try:
        async with Runtime(settings) as a, Runtime(settings) as b, Runtime(settings) as client:
            older_runtimes.add(b.id)
            (newer,) = await a.serve(agent)
            (older,) = await b.serve(agent)
            await client.wait_for_agents(["mixed"], timeout=10)
            view = client.view
            assert view is not None
            with anyio.fail_after(10):
                while view.instances_of("mixed") < 2:
                    await anyio.sleep(0.05)
            assert view.reads_compact("mixed", newer.instance_id)
            assert not view.reads_compact("mixed", older.instance_id)
            assert not view.reads_compact("mixed")
            for _ in range(4):
                assert (await client.call("mixed", "run", {}))["version"] == "1.3"
            assert (await client.call(by_instance(newer.instance_id), "run", {}))["version"] == "1.4"
            assert (await client.call(by_instance(older.instance_id), "run", {}))["version"] == "1.3"
            await observer.flush()
    finally:
        await observer.aclose()
    assert wire.forms() == ["full"] * 4 + ["compact", "full"]


def _reads_1_3_only(data: bytes) -> Envelope:
    """The envelope decoder of a runtime before 1.4: the full form only (its ``bus.codec``)."""
    try:
        return msgspec.json.decode(data, type=Envelope)  # type: ignore[no-any-return]
    except msgspec.ValidationError as exc:
        raise InvalidEnvelope(
            f"invalid envelope: {exc}", details={"field": codec.bad_field(str(exc))}
        ) from None
    except msgspec.DecodeError as exc:
        raise InvalidEnvelope(f"malformed envelope: {exc}", details={"field": "$"}) from None


def _reads_1_4(data: bytes) -> Envelope:
    """The envelope decoder of a 1.4 runtime: a compact message without a conversation id
    is refused as 1.4 refused it (its ``c`` was required); the rest is read as here."""
    if is_compact(data) and "c" not in msgspec.json.decode(data):
        raise InvalidEnvelope(
            "invalid envelope: Object missing required field `c`", details={"field": full_path("c")}
        )
    return _DECODE(data)


_DECODE = codec.decode_envelope


@pytest.mark.parametrize("older", [_reads_1_3_only, _reads_1_4], ids=["before 1.4", "1.4"])
async def test_a_compact_request_an_older_runtime_refuses_is_answered_in_the_full_form_once(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, older: Any
) -> None:
    """An instance that reads less than its record says (as an older one the caller's view has
    not heard of yet) refuses the compact request unread: it goes again in the full form,
    under a new request id, and is handled once; the next call goes full at once."""
    agent, ran = _agent("legacy", "test.legacy")
    observer, wire = await _watch(settings, "legacy")
    try:
        async with Runtime(settings) as server, Runtime(settings) as client:
            (host,) = await server.serve(agent)
            await client.wait_for_agents(["legacy"], timeout=10)
            assert client.view is not None and client.view.reads_compact("legacy")
            # From here the callee decodes as an older runtime did (the caller decodes
            # only full-form replies from it, which that decoder reads as this one does).
            monkeypatch.setattr(codec, "decode_envelope", older)
            assert await client.call("legacy", "run", {"n": 1}) == {"n": 1, "version": "1.3"}
            assert await client.call("legacy", "run", {"n": 2}) == {"n": 2, "version": "1.3"}
            await observer.flush()
            stats = host.stats
    finally:
        await observer.aclose()
    assert ran == [{"n": 1}, {"n": 2}]  # each handled once
    assert wire.forms() == ["compact", "full", "full"]
    assert client.bus.caller.forms.resent == 1
    assert stats.invalid == 1 and stats.handled == 2
    first, again = (msgspec.json.decode(d) for d in wire.requests[:2])
    assert again["metadata"]["requestId"] != first["m"].get("ri", first["m"]["ci"])
    assert again["metadata"]["correlationId"] == first["m"]["ci"]
    # The compact form left out the conversation id, the call tree's; the full one has it.
    assert "c" not in first and again["conversationId"] == first["m"]["ci"]


async def test_a_request_a_new_runtime_refuses_ends_with_its_typed_error_unsent_again(
    settings: Settings,
) -> None:
    agent, ran = _agent("strict", "test.strict")
    observer, wire = await _watch(settings, "strict")
    try:
        async with Runtime(settings) as server, Runtime(settings) as client:
            await server.serve(agent)
            await client.wait_for_agents(["strict"], timeout=10)
            with pytest.raises(A2AError) as info:
                await client.call("strict", "r" * 300, {})  # an action name longer than 256
            assert info.value.code == "INVALID_ENVELOPE"
            assert info.value.details["field"] == "payload.action"
            # A conversation id it refuses was written, not left out: no older runtime's refusal.
            with pytest.raises(A2AError) as info:
                await client.call("strict", "run", {"n": 0}, conversation_id="c" * 300)
            assert info.value.code == "INVALID_ENVELOPE"
            assert info.value.details["field"] == "conversationId"
            assert await client.call("strict", "run", {"n": 1}) == {"n": 1, "version": "1.4"}
            await observer.flush()
    finally:
        await observer.aclose()
    assert ran == [{"n": 1}]
    assert wire.forms() == ["compact"] * 3  # the full form would be refused alike
    assert client.bus.caller.forms.resent == 0


async def test_a_forged_refusal_in_a_reply_batch_never_has_a_call_run_twice(settings: Settings) -> None:
    """A batch line may name any call of the runtime it goes to: a refusal naming no request
    (what an older runtime answers a compact request with) is not taken from one, so the
    call is neither sent again while its callee runs it nor ended: it gets its answer."""
    agent = Agent("slow", capabilities=[AgentCapability(id="test.slow")])
    ran: list[int] = []

    @agent.action("run")
    async def _run(ctx: Context, params: dict[str, Any]) -> Any:
        ran.append(params["n"])
        await anyio.sleep(0.5)
        return params

    forger = await NatsTransport.connect(settings.nats_url)
    try:
        async with Runtime(settings) as server, Runtime(settings) as client:
            await server.serve(agent)
            await client.wait_for_agents(["slow"], timeout=10)
            caller = client.bus.caller
            refusal = codec.encode_envelope(
                error_to(None, "slow", "x", InvalidEnvelope("unreadable", details={"field": "type"}), None)
            )
            async with anyio.create_task_group() as tg:

                async def call() -> None:
                    assert await client.call("slow", "run", {"n": 1}, timeout=5) == {"n": 1}

                tg.start_soon(call)
                with anyio.fail_after(5):
                    while not ran:
                        await anyio.sleep(0.01)
                (key,) = [k for k, _ in caller.pending.items()]
                line = key.encode() + b" " + refusal
                await forger.publish(caller.reply_prefix + "zzz", line, headers={"A2A-Replies": "1"})
            await anyio.sleep(0.7)
            assert ran == [1] and caller.forms.resent == 0 and caller.stats.invalid_replies == 1
    finally:
        await forger.aclose()


async def test_by_name_an_agent_is_followed_once_it_has_answered_and_a_missing_one_never(
    settings: Settings,
) -> None:
    """A view follows the agents its runtime calls by name only once one has answered: the
    first calls go in the full form, the later ones compact; a name nobody serves costs no
    registry read."""
    agent, ran = _agent("late", "test.late")
    observer, wire = await _watch(settings, "late")
    try:
        async with Runtime(settings) as server, Runtime(settings) as client:
            await server.serve(agent)
            with anyio.fail_after(10):
                while True:  # no wait_for_agents: the view does not follow "late" yet
                    try:
                        await client.call("late", "run", {"n": 0}, timeout=1)
                        break
                    except A2AError:
                        await anyio.sleep(0.1)
            view = client.view
            assert view is not None
            with anyio.fail_after(5):
                while not view.reads_compact("late"):
                    await anyio.sleep(0.05)
            assert await client.call("late", "run", {"n": 1}) == {"n": 1, "version": "1.4"}
            for name in ("ghost-1", "ghost-2"):
                with pytest.raises(A2AError):
                    await client.call(name, "run", {}, timeout=1)
            await anyio.sleep(0.3)
            assert not view.follows(agents=["ghost-1"]) and not view.follows(agents=["ghost-2"])
            await observer.flush()
    finally:
        await observer.aclose()
    assert wire.forms()[0] == "full" and wire.forms()[-1] == "compact"
    assert ran[-1] == {"n": 1}
