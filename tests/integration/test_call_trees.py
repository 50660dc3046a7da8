"""One correlation id through every hop of a call (seed 004), each hop with a request id of
its own and the parent's as its ``parentId``; one request to several agents (``to_each``,
seed 004's ``targetAgentId`` list). Real nats-server and Redis processes."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from a2a import A2AError, Agent, Context, Runtime, Settings, to_each
from a2a.errors import FanOutExceeded, NoResponders
from a2a.stores.audit import AuditRecord, decode_records

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


def team() -> list[Agent]:
    lead, mid, leaf = Agent("lead"), Agent("mid"), Agent("leaf")

    @lead.action("run")
    async def run(ctx: Context, p: dict[str, Any]) -> list[Any]:
        answers: list[Any] = [None, None]

        async def ask(i: int) -> None:
            answers[i] = await ctx.call("mid", "work", {"i": i})

        async with anyio.create_task_group() as tg:  # two children at once
            for i in range(2):
                tg.start_soon(ask, i)
        return answers

    @mid.action("work")
    async def work(ctx: Context, p: dict[str, Any]) -> dict[str, Any]:
        below = await ctx.call("leaf", "ids", {})
        return {"mine": [ctx.correlation_id, ctx.request.metadata.key], "leaf": below}

    @leaf.action("ids")
    async def ids(ctx: Context, p: dict[str, Any]) -> list[str]:
        return [ctx.correlation_id, ctx.request.metadata.key]

    return [lead, mid, leaf]


async def _records(rt: Runtime, into: list[AuditRecord]) -> None:
    async def collect(msg: Any) -> None:
        into.extend(decode_records(msg.data))

    await rt.subscribe_audit(collect)


async def _five(records: list[AuditRecord], tree: str) -> list[AuditRecord]:
    with anyio.fail_after(10):
        while len(mine := [r for r in records if (r.correlation_id or r.request_id) == tree]) < 5:
            await anyio.sleep(0.02)
    return mine


@pytest.mark.parametrize("named", [None, "order-4711-3f9c2a"])
async def test_every_hop_carries_the_first_requests_correlation_id(
    settings: Settings, named: str | None
) -> None:
    records: list[AuditRecord] = []
    async with Runtime(settings) as rt:
        await rt.serve(*team())
        await _records(rt, records)
        response = await rt.request("lead", "run", {}, correlation_id=named)
        tree = response.metadata.correlation_id
        if named is not None:
            assert tree == named
        mine = await _five(records, tree)

    # What each handler saw: the same correlation id, a request id of its own.
    seen = [a for answer in response.payload.result for a in (answer["mine"], answer["leaf"])]
    assert {correlation for correlation, _ in seen} == {tree}
    assert len({request for _, request in seen}) == 4

    # The audit trail: five hops, one tree, each parent the request above it.
    by_id = {r.request_id: r for r in mine}
    assert len(by_id) == 5
    root = [r for r in mine if r.parent_id is None]
    assert [(r.target, r.depth) for r in root] == [("lead", 0)]
    assert root[0].request_id == response.metadata.key
    for r in mine:
        if r.parent_id is not None:
            parent = by_id[r.parent_id]
            assert (parent.target, r.target) in {("lead", "mid"), ("mid", "leaf")}
            assert r.depth == parent.depth + 1
    assert sorted(r.target for r in mine) == ["lead", "leaf", "leaf", "mid", "mid"]


async def test_a_second_call_is_a_tree_of_its_own(settings: Settings) -> None:
    async with Runtime(settings) as rt:
        await rt.serve(*team())
        first = await rt.request("leaf", "ids", {})
        second = await rt.request("leaf", "ids", {})
    assert first.metadata.correlation_id != second.metadata.correlation_id
    assert first.payload.result[0] == first.metadata.correlation_id


def reviewers(names: list[str]) -> list[Agent]:
    agents = []
    for name in names:
        agent = Agent(name)

        @agent.action("review")
        async def review(ctx: Context, p: dict[str, Any]) -> dict[str, Any]:
            if p.get("fail") == ctx.agent:
                raise RuntimeError("cannot review this")
            env = ctx.request
            return {
                "by": ctx.agent,
                "targets": env.target_agent_id,
                "conversation": env.conversation_id,
                "correlation": ctx.correlation_id,
            }

        agents.append(agent)
    return agents


async def test_one_request_to_each_of_several_agents(settings: Settings) -> None:
    async with Runtime(settings) as rt:
        await rt.serve(*reviewers(["style", "security", "tests"]))
        results = await rt.call(
            to_each("style", "security", "tests", "nobody"), "review", {"fail": "tests"}, timeout=5
        )
    style, security, tests, nobody = results
    assert [style["by"], security["by"]] == ["style", "security"]  # in the order asked
    for seen in (style, security):  # every envelope names the whole group
        assert seen["targets"] == ["style", "security", "tests", "nobody"]
    assert style["conversation"] == security["conversation"]  # one conversation, one call tree
    assert style["correlation"] == security["correlation"]
    assert isinstance(tests, A2AError) and tests.code == "AGENT_ERROR" and tests.agent == "tests"
    assert isinstance(nobody, NoResponders)


async def test_an_agent_sends_to_each_within_its_fan_out_limit(settings: Settings) -> None:
    lead = Agent("lead")

    @lead.action("review")
    async def review(ctx: Context, p: dict[str, Any]) -> Any:
        return await ctx.call(to_each(*p["who"]), "review", {})

    names = ["style", "security", "tests", "docs"]
    into: list[AuditRecord] = []
    async with Runtime(settings) as rt:
        await rt.serve(lead, *reviewers(names))
        await _records(rt, into)
        three = await rt.request("lead", "review", {"who": names[:3]})
        assert [r["by"] for r in three.payload.result] == names[:3]
        assert {r["correlation"] for r in three.payload.result} == {three.metadata.correlation_id}
        with pytest.raises(FanOutExceeded) as refused:
            await rt.call("lead", "review", {"who": names})
        await anyio.sleep(0.3)
        sent = [r.target for r in into if r.origin == "lead" and r.outcome == "ok"]
    assert "Too many concurrent delegates (4/3)" in refused.value.message
    assert sorted(sent) == sorted(names[:3])  # the refused fan-out sent nothing


def test_to_each_takes_distinct_names() -> None:
    for bad in [(), ("a", "a"), ("a", "")]:
        with pytest.raises(ValueError):
            to_each(*bad)
