"""A call to an agent hosted by the calling runtime skips the message server, and nothing else.

Every scenario runs twice on one broker: once with the agents in the calling runtime
(handed over in-process) and once with them in another runtime (through the broker).
Results, typed errors (code, agent, hop, where they were raised), cancellation of the
callee and the audit trail must be the same; only the broker traffic differs.
"""

from __future__ import annotations

import re
from typing import Any

import anyio
import msgspec
import pytest

from a2a import A2AError, Agent, Context, Runtime
from a2a.stores.audit import decode_records
from tests.agents import echo, relay
from transports import MemoryBroker

from .conftest import MakeRuntime

pytestmark = pytest.mark.anyio

gate = Agent("gate", max_concurrency=1, max_queue=0)
cancelled: dict[str, anyio.Event] = {}


@gate.action("hold")
@gate.action("stall")
async def _hold(ctx: Context, params: dict[str, Any]) -> str:
    try:
        await anyio.sleep(params.get("seconds", 0.3))
    except anyio.get_cancelled_exc_class():
        if params["mark"] in cancelled:
            cancelled[params["mark"]].set()
        raise
    return "held"


@gate.action("odd")
async def _odd(ctx: Context, params: dict[str, Any]) -> object:
    return object()  # not JSON-serialisable


SCENARIOS: list[tuple[str, str, dict[str, Any] | None, float]] = [
    ("echo", "echo", {"a": [1, 2]}, 5),
    ("echo", "nope", None, 5),  # UNKNOWN_ACTION
    ("echo", "sleep", {"seconds": -1}, 5),  # INVALID_PARAMS
    ("echo", "fail", {"message": "disk full"}, 5),  # AGENT_ERROR
    ("echo", "big", {"size": 70_000}, 5),  # result too large: PAYLOAD_TOO_LARGE from the callee
    ("echo", "echo", {"pad": "y" * 70_000}, 5),  # request too large: refused before sending
    ("gate", "odd", None, 5),  # unserialisable result
    ("relay", "forward", {"target": "echo", "action": "echo", "params": {"x": 1}}, 5),  # two hops
    ("relay", "forward", {"target": "relay", "action": "forward", "catch": True}, 5),  # a cycle
    ("ghost", "x", None, 5),  # NO_RESPONDERS
]


def _outcome(result: Any = None, error: A2AError | None = None) -> Any:
    if error is None:
        if isinstance(result, dict):
            result.pop("via", None)  # the relay's instance id differs between the two runs
        return ("ok", result)
    message = error.message.replace("a2a.local.", "a2a.<ns>.").replace("a2a.remote.", "a2a.<ns>.")
    # An envelope's size counts its ids, whose length grows with a process-wide counter of
    # the replies handed out: the two paths differ there by a digit, depending on what ran first.
    size = re.search(r"envelope of (\d+) bytes", message)
    if size is not None:
        assert int(size.group(1)) > 65536, message
        message = message.replace(size.group(0), "envelope of <n> bytes")
    return (error.code, error.agent, error.hop, error.remote, error.details.get("path"), message)


async def _run(client: Runtime) -> list[Any]:
    outcomes = []
    for target, action, params, timeout in SCENARIOS:
        try:
            outcomes.append(_outcome(await client.call(target, action, params, timeout=timeout)))
        except A2AError as exc:
            outcomes.append(_outcome(error=exc))
    # A deadline: the caller gives up at 0.2 s, and the callee's handler is cancelled.
    cancelled["deadline"] = anyio.Event()
    with pytest.raises(A2AError) as late:
        await client.call("gate", "stall", {"seconds": 5, "mark": "deadline"}, timeout=0.2)
    outcomes.append(late.value.code)
    with anyio.fail_after(2):
        await cancelled["deadline"].wait()
    # A full queue: the second of two concurrent calls is refused.
    codes: list[str] = []

    async def one() -> None:
        try:
            codes.append(await client.call("gate", "hold", {"seconds": 0.2, "mark": "q"}, timeout=5))
        except A2AError as exc:
            codes.append(exc.code)

    async with anyio.create_task_group() as tg:
        tg.start_soon(one)
        await anyio.sleep(0.05)
        tg.start_soon(one)
    outcomes.append(sorted(codes))
    return outcomes


async def _tap(broker: MemoryBroker, namespace: str) -> list[str]:
    """Subjects of every request and reply that crosses the broker in ``namespace``."""
    seen: list[str] = []
    tap = broker.connect()

    async def record(msg: Any) -> None:
        seen.append(msg.subject)

    # Not ``agent.>``: a subscriber on the ghost's subject would take away its "no responders".
    for subject in ("agent.echo.*", "agent.relay.*", "agent.gate.*", "inst.>", "reply.>"):
        await tap.subscribe(f"a2a.{namespace}.{subject}", record)
    return seen


async def _audit(client: Runtime) -> list[Any]:
    records: list[Any] = []

    async def collect(msg: Any) -> None:
        records.extend(decode_records(msg.data))

    await client.subscribe_audit(collect)
    return records


def _trail(records: list[Any]) -> list[tuple[Any, ...]]:
    fields = ("side", "origin", "target", "action", "outcome", "hop", "depth", "error_code")
    trail = []
    for record in records:
        row = msgspec.structs.asdict(record)
        if row["action"] == "stall":
            # The callee's deadline and the caller's own fall at the same moment on either
            # path: the callee records CANCELLED or DEADLINE_EXCEEDED, and the caller writes
            # a record only if its timer fired before the callee's answer arrived.
            assert row["error_code"] in ("CANCELLED", "DEADLINE_EXCEEDED")
            continue
        trail.append(tuple(row[f] for f in fields))
    return sorted(trail)


async def test_local_and_remote_calls_end_the_same_way(
    make_runtime: MakeRuntime, broker: MemoryBroker
) -> None:
    local_traffic = await _tap(broker, "local")
    remote_traffic = await _tap(broker, "remote")

    local = await make_runtime(echo, relay, gate, namespace="local")
    local_audit = await _audit(local)
    local_outcomes = await _run(local)

    await make_runtime(echo, relay, gate, namespace="remote")
    client = await make_runtime(namespace="remote")
    remote_audit = await _audit(client)
    remote_outcomes = await _run(client)

    assert local_outcomes == remote_outcomes
    assert local_outcomes[0] == ("ok", {"a": [1, 2]})
    assert [o[0] for o in local_outcomes[1:7]] == [
        "UNKNOWN_ACTION",
        "INVALID_PARAMS",
        "AGENT_ERROR",
        "PAYLOAD_TOO_LARGE",
        "PAYLOAD_TOO_LARGE",
        "AGENT_ERROR",
    ]
    assert local_outcomes[7][1]["result"] == {"x": 1} and local_outcomes[7][1]["hop"] == 1
    assert local_outcomes[8] == ("ok", {"error": "CYCLE_DETECTED", "agent": "relay", "hop": 1})
    assert local_outcomes[9][0] == "NO_RESPONDERS"
    assert local_outcomes[10] == "DEADLINE_EXCEEDED"
    assert local_outcomes[11] == ["OVERLOADED", "held"]

    await anyio.sleep(0.3)  # audit batches are flushed every 50 ms
    assert _trail(local_audit) == _trail(remote_audit)
    assert len(local_audit) >= len(SCENARIOS)
    for audit in (local_audit, remote_audit):
        assert any(r.action == "stall" and r.side == "callee" for r in audit)

    # On the local side only the call to an agent nobody hosts crossed the broker (its
    # "no responders" status came back on the reply subject).
    assert len(local_traffic) == 1 and local_traffic[0].startswith("a2a.local.reply.")
    assert len(remote_traffic) > 2 * len(SCENARIOS)
