"""The callee decides by itself: its own limits, the lineage, the user grant, the conversation owner."""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

import anyio
import nkeys
import pytest

from a2a import Agent, Context, Runtime, Settings
from a2a.core.grants import GrantIssuer, GrantVerifier
from a2a.errors import PermissionDenied
from bus import codec
from bus.ids import new_id
from bus.wire import PROTOCOL_VERSION, Metadata, Payload, RequestEnvelope
from tests.helpers import raw_exchange

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

probe = Agent("probe")


@probe.action("limits")
async def _limits(ctx: Context, params: dict[str, Any]) -> Any:
    meta = ctx.request.metadata
    return {"ttl": meta.ttl_ms, "maxHops": meta.max_hops, "maxDepth": meta.max_depth, "budget": meta.budget}


@probe.action("user")
async def _user(ctx: Context, params: dict[str, Any]) -> Any:
    return {"user": ctx.user_id}


hand = Agent("hand")


@hand.action("user")
async def _hand_on(ctx: Context, params: dict[str, Any]) -> Any:
    return await ctx.call("probe", "user", {})


@probe.action("hang")
async def _hang(ctx: Context, params: dict[str, Any]) -> Any:
    await anyio.sleep(3600)


def seed() -> str:
    return nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER).decode()


def envelope(**fields: Any) -> RequestEnvelope:
    meta = {"timestamp": 1, "correlation_id": new_id(), "ttl_ms": 3000, **fields.pop("meta", {})}
    return RequestEnvelope(
        message_id=new_id(),
        source_agent_id=fields.pop("source", "raw"),
        target_agent_id="probe",
        conversation_id=fields.pop("conversation", new_id()),
        protocol_version=PROTOCOL_VERSION,
        payload=Payload(action=fields.pop("action", "limits"), parameters=fields.pop("params", {})),
        metadata=Metadata(**meta),
        **fields,
    )


async def send(rt: Runtime, env: RequestEnvelope, timeout: float = 5.0) -> dict[str, Any]:
    return await raw_exchange(
        rt.bus.transport, rt.bus.subjects.agent("probe"), codec.encode_envelope(env), timeout
    )


async def test_the_callee_caps_what_the_envelope_asks_for(settings: Settings) -> None:
    own = Settings(**{**_fields(settings), "max_ttl": 0.5, "max_hops": 4, "max_depth": 2, "max_budget": 100})
    async with Runtime(own) as rt:
        await rt.serve(probe)
        reply = await send(
            rt, envelope(meta={"ttl_ms": 2**62, "max_hops": 1000, "max_depth": 99, "budget": 10**12})
        )
        assert reply["payload"]["result"] == {"ttl": 500, "maxHops": 4, "maxDepth": 2, "budget": 100}
        # A handler that never returns holds its slot no longer than the callee's own maximum.
        started = time.monotonic()
        reply = await send(rt, envelope(action="hang", meta={"ttl_ms": 2**62}))
        assert reply["payload"]["error"]["code"] == "DEADLINE_EXCEEDED"
        assert time.monotonic() - started < 2.0
        await anyio.sleep(0.1)
        assert rt.hosts["probe"].accepted == 0 and rt.hosts["probe"].slots.used == 0


async def test_a_lineage_that_does_not_add_up_is_refused(settings: Settings) -> None:
    async with Runtime(settings) as rt:
        await rt.serve(probe)
        for meta, source in (({"depth": 3}, "raw"), ({"depth": 1, "call_chain": ["other"]}, "raw")):
            reply = await send(rt, envelope(source=source, meta=meta))
            assert reply["payload"]["error"]["code"] == "INVALID_ENVELOPE"
        ok = await send(rt, envelope(meta={"depth": 1, "call_chain": ["raw"]}))
        assert ok["type"] == "response"


async def test_users_come_from_grants_signed_by_an_entry_point(settings: Settings) -> None:
    entry, stranger = seed(), seed()
    trusted = GrantIssuer(entry).public_key
    callee = Settings(**{**_fields(settings), "grant_keys": trusted})
    caller = Settings(**{**_fields(settings), "grant_seed": entry})
    async with Runtime(callee) as server, Runtime(caller) as client:
        await server.serve(probe, hand)
        # The honest path: the entry point signs, the grant travels down the chain unchanged.
        assert await client.call("hand", "user", {}, user_id="alice") == {"user": "alice"}
        alice = GrantIssuer(entry).grant("alice")
        attacks = {
            "a userId without a grant": envelope(action="user", user_id="alice"),
            "someone else's grant": envelope(action="user", user_id="bob", user_grant=alice),
            "a grant from an untrusted key": envelope(
                action="user", user_id="alice", user_grant=GrantIssuer(stranger).grant("alice")
            ),
            "a tampered grant": envelope(action="user", user_id="alice", user_grant=alice[:-4] + "AAAA"),
            "garbage": envelope(action="user", user_id="alice", user_grant="a2a1.%%%.%%%"),
            "a grant for another conversation": envelope(
                action="user", user_id="alice", user_grant=GrantIssuer(entry).grant("alice", "elsewhere")
            ),
            "an expired grant": envelope(
                action="user", user_id="alice", user_grant=GrantIssuer(entry, ttl=-1).grant("alice")
            ),
        }
        for name, env in attacks.items():
            reply = await send(server, env)
            assert reply["payload"]["error"]["code"] == "PERMISSION_DENIED", name
        bound = envelope(
            action="user",
            conversation="here",
            user_id="alice",
            user_grant=GrantIssuer(entry).grant("alice", "here"),
        )
        assert (await send(server, bound))["payload"]["result"] == {"user": "alice"}
        # A call without a user is still served unless grants are required.
        assert (await send(server, envelope(action="user")))["payload"]["result"] == {"user": None}
    strict = Settings(**{**_fields(settings), "grant_keys": trusted, "require_grants": True})
    async with Runtime(strict) as server:
        await server.serve(probe)
        assert (await send(server, envelope(action="user")))["payload"]["error"][
            "code"
        ] == "PERMISSION_DENIED"


def test_grants_are_verified_once_then_remembered() -> None:
    issuer = GrantIssuer(seed())
    verifier = GrantVerifier([issuer.public_key])
    token = issuer.grant("alice")
    assert verifier.verify(token).sub == "alice"
    started = time.perf_counter()
    for _ in range(10_000):
        verifier.verify(token)
    assert (time.perf_counter() - started) / 10_000 < 20e-6  # a lookup, not a signature check
    with pytest.raises(ValueError):
        GrantVerifier(["not-a-key"])
    with pytest.raises(PermissionDenied):
        verifier.verify("x" * 5000)


def _fields(settings: Settings) -> dict[str, Any]:
    return {f: getattr(settings, f) for f in settings.__struct_fields__}


async def test_the_cli_is_an_entry_point_with_a_key_from_grant_key(settings: Settings) -> None:
    made = (await anyio.run_process([sys.executable, "-m", "a2a", "grant-key"])).stdout.decode()
    keys = dict(line.split("=", 1) for line in made.splitlines() if not line.startswith("#"))
    callee = Settings(**{**_fields(settings), "grant_keys": keys["A2A_GRANT_KEYS"]})
    env = {
        **os.environ,
        "NATS_URL": settings.nats_url,
        "REDIS_URL": settings.redis_url or "",
        "A2A_NAMESPACE": settings.namespace,
    }
    command = [sys.executable, "-m", "a2a", "call", "probe", "user", "--user", "alice"]
    async with Runtime(callee) as server:
        await server.serve(probe)
        signed = await anyio.run_process(command, env={**env, "A2A_GRANT_SEED": keys["A2A_GRANT_SEED"]})
        assert json.loads(signed.stdout) == {"user": "alice"}
        unsigned = await anyio.run_process(command, env=env, check=False)
        assert unsigned.returncode == 1 and b"PERMISSION_DENIED" in unsigned.stderr
