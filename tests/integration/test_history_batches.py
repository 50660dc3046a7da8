"""The history store's batch writes (one FCALL of the registry library per batch) against a
real Redis: owners, goals, trimming, lengths, summaries read and written in one round trip,
a recorder that summarises a new conversation without reading it, and bad batches refused."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
import redis.asyncio as aioredis
from redis.exceptions import ResponseError

from a2a import Agent, Context, Runtime, Settings
from a2a.errors import Unavailable
from a2a.stores.history import Exchange, HistoryStore
from a2a.stores.summary import SummaryInput, summarise
from bus.handoff import ChatMessage
from discovery import call_function

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


@pytest.fixture
async def client(redis_url: str) -> AsyncIterator[aioredis.Redis]:
    redis = aioredis.Redis.from_url(redis_url, decode_responses=True)
    yield redis
    await redis.aclose()


def exchange(conversation: str, user: str | None, ask: str, answer: str, role: str = "user") -> Exchange:
    return Exchange(
        conversation_id=conversation,
        user_id=user,
        request=ChatMessage(role=role, content=ask, name="script"),
        answer=ChatMessage(role="assistant", content=answer, name="notes"),
    )


async def test_a_batch_writes_each_conversation_of_its_owner_in_order(
    client: aioredis.Redis, namespace: str
) -> None:
    history = HistoryStore(client, namespace, max_messages=4)
    await history.claim("owned", "alice")
    batch = [
        exchange("owned", "alice", "first", "a1"),
        exchange("owned", "mallory", "not hers", "x"),  # another user's: left out
        exchange("open", None, "q1", "r1", role="agent"),  # an agent asks: no goal
        exchange("owned", "alice", "second", "a2"),
        exchange("open", "bob", "q2", "r2"),  # no owner: anyone's exchange is written
        exchange("owned", "alice", "third", "a3"),
    ]
    appended = await history.append_exchanges(batch)
    assert [x.request.content for x in appended.written] == ["first", "q1", "second", "q2", "third"]
    assert appended.lengths == {"owned": 6, "open": 4}  # before trimming to max_messages
    assert appended.writes == {"owned": 3, "open": 2}
    assert [m.content for m in await history.messages("owned")] == ["second", "a2", "third", "a3"]
    assert [m.content for m in await history.messages("open")] == ["q1", "r1", "q2", "r2"]
    (owned, open_) = await history.summary_inputs(["owned", "open"], 3)
    assert owned.goal == "first" and open_.goal == "q2"  # the first user request, kept past trimming
    assert [m.content for m in owned.messages] == ["a2", "third", "a3"]
    assert await history.set_summaries([("owned", "alice's", 3), ("open", "anyone's", 2)]) == 2
    assert await history.summary("owned") == "alice's"
    assert (await history.summary_inputs(["open"], 1))[0].previous == "anyone's"
    assert await client.ttl(history._key("owned", "messages")) > 0
    assert await client.ttl(history._key("owned", "meta")) > 0
    # A later batch neither replaces a goal nor trims a list within its bounds.
    appended = await history.append_exchanges([exchange("owned", "alice", "fourth", "a4")])
    assert appended.lengths == {"owned": 6} and appended.writes == {"owned": 4}
    assert (await history.summary_inputs(["owned"], 1))[0].goal == "first"
    assert [m.content for m in await history.messages("owned")] == ["third", "a3", "fourth", "a4"]
    roomy = HistoryStore(client, namespace, max_messages=100)
    assert (await roomy.append_exchanges([exchange("fresh", None, "go", "ok")])).lengths == {"fresh": 2}
    assert (await roomy.summary_inputs(["fresh"], 1))[0].goal == "go"


async def test_batches_longer_than_one_call_and_odd_ids(client: aioredis.Redis, namespace: str) -> None:
    history = HistoryStore(client, namespace)
    ids = ["plain", "with:colons", "ünïcode", 'quote"d']
    batch = [exchange(ids[i % 4], "alice", f"m{i}", f"a{i}") for i in range(600)]
    appended = await history.append_exchanges(batch)  # three FCALLs of 256 at most
    assert len(appended.written) == 600
    assert appended.lengths == dict.fromkeys(ids, 300)
    assert appended.writes == dict.fromkeys(ids, 150)
    for n, conversation in enumerate(ids):
        messages = await history.messages(conversation)
        assert [m.content for m in messages[:2]] == [f"m{n}", f"a{n}"]


async def test_malformed_batches_are_refused_by_the_function(client: aioredis.Redis, namespace: str) -> None:
    base = [HistoryStore(client, namespace)._base]
    with pytest.raises(ResponseError, match="JSON array"):
        await call_function(client, "history_append", base, [60, 10, "not json"])
    assert await call_function(client, "history_append", base, [60, 10, '{"an": "object"}']) == [[], []]
    # Rows of the wrong shape are skipped; the others are written.
    message = json.dumps({"role": "user", "content": "hi"})
    rows = json.dumps([[1, "u", "", "{}", "{}"], ["ok", "", "", message, "{}"], "x"])
    kept, held = await call_function(client, "history_append", base, [60, 10, rows])
    assert kept == [1] and held == [["ok", 1, 2]]


async def test_an_older_summary_never_replaces_a_newer_one(client: aioredis.Redis, namespace: str) -> None:
    history = HistoryStore(client, namespace)
    await history.append_exchanges([exchange("c", "alice", f"m{i}", f"a{i}") for i in range(3)])
    assert await history.set_summaries([("c", "of three", 3)]) == 1
    assert await history.set_summaries([("c", "of one, from a slow summariser", 1)]) == 0
    assert await history.summary("c") == "of three"
    assert await history.set_summaries([("c", "of three again", 3)]) == 0
    (inputs,) = await history.summary_inputs(["c"], 2)
    assert inputs.writes == 3


async def test_what_other_users_wrote_into_the_store_blocks_nobody_else(
    client: aioredis.Redis, namespace: str
) -> None:
    history = HistoryStore(client, namespace)
    await history.append_exchanges([exchange(c, "alice", "hello", "hi") for c in ("bad", "good")])
    await client.rpush(history._key("bad", "messages"), "not a message")
    bad, good = await history.summary_inputs(["bad", "good"], 10)
    assert [m.content for m in bad.messages] == ["hello", "hi"]  # the unreadable one is left out
    assert [m.content for m in good.messages] == ["hello", "hi"]
    await client.set(history._key("odd", "meta"), "not a hash")  # a meta of the wrong type
    appended = await history.append_exchanges([exchange("odd", "alice", "q", "a")])
    assert appended.written == [] and await client.get(history._key("odd", "meta")) == "not a hash"
    await client.hset(history._key("empty", "meta"), "userId", "")  # claimed by an empty id
    assert (await history.append_exchanges([exchange("empty", None, "q", "a")])).written == []


async def test_a_new_conversation_is_summarised_without_reading_it(settings: Settings) -> None:
    seen: list[SummaryInput] = []

    def summariser(digest: SummaryInput) -> str:
        seen.append(digest)
        return summarise(digest)

    async with Runtime(settings, summariser=summariser) as rt:
        notes = Agent("notes")

        @notes.action("reply")
        async def reply(ctx: Context, p: dict[str, Any]) -> str:
            return f"noted: {p['text']}"

        await rt.serve(notes)
        history = rt.history
        assert history is not None
        read: list[str] = []
        real = history.summary_inputs

        async def counted(ids: Sequence[str], window: int) -> list[SummaryInput]:
            read.extend(ids)
            return await real(ids, window)

        history.summary_inputs = counted  # type: ignore[method-assign]
        await history.append_exchanges([exchange("old", "alice", "earlier", "before")])
        for conversation, text in (("new", "plan the release"), ("old", "later")):
            await rt.call("notes", "reply", {"text": text}, conversation_id=conversation, user_id="alice")
        recorder = rt.services.recorder
        assert recorder is not None
        await recorder.flush()
        assert read == ["old"]  # only the conversation with earlier messages was read
        by_id = {d.conversation_id: d for d in seen}
        assert by_id["new"].goal == "plan the release" and by_id["new"].previous is None
        assert [m.content for m in by_id["new"].messages] == ["plan the release", "noted: plan the release"]
        assert [m.content for m in by_id["old"].messages] == ["earlier", "before", "later", "noted: later"]
        assert await history.summary("new") == summarise(by_id["new"])
        assert "earlier" in (await history.summary("old") or "")


async def test_the_default_summary_is_made_when_read_and_a_kept_one_only_while_it_is_current(
    settings: Settings, client: aioredis.Redis
) -> None:
    async with Runtime(settings) as rt:  # no summariser: nothing is written per call
        notes = Agent("notes")

        @notes.action("reply")
        async def reply(ctx: Context, p: dict[str, Any]) -> str:
            return f"noted: {p['text']}"

        await rt.serve(notes)
        history, recorder = rt.history, rt.services.recorder
        assert history is not None and recorder is not None
        assert await history.summary("c") is None  # nothing written yet
        for text in ("plan the release", "list the risks"):
            await rt.call("notes", "reply", {"text": text}, conversation_id="c", user_id="alice")
        await recorder.flush()
        assert recorder.stats.written == 2 and recorder.stats.summaries == 0
        assert await client.hget(history._key("c", "meta"), "summary") is None
        (digest,) = await history.summary_inputs(["c"], 20)
        made = await history.summary("c")
        assert made == summarise(digest)
        assert made is not None and made.startswith("Goal: plan the release") and "list the risks" in made

        await history.set_summary("c", "kept: the release and its risks")
        assert await history.summary("c") == "kept: the release and its risks"  # covers both writes
        await rt.call("notes", "reply", {"text": "ship it"}, conversation_id="c", user_id="alice")
        await recorder.flush()
        later = await history.summary("c")  # the kept one no longer covers every write
        assert later is not None and later.startswith("Goal: plan the release") and "ship it" in later
        await client.hset(history._key("c", "meta"), "summarised", "not a number")
        assert (await history.summary("c") or "").startswith("Goal:")  # unreadable: not current


async def test_a_summary_is_made_of_redacted_messages_and_survives_bad_bytes(
    client: aioredis.Redis, namespace: str, redis_url: str
) -> None:
    """A delegation's thread keeps answers as they came: the summary made of them redacts each
    message whole before it flattens and cuts lines (after which a secret may not look like
    one). Bytes that are not UTF-8 in a goal or message are a typed error for a client that
    decodes replies (the runtime's), and read around by one that does not."""
    history = HistoryStore(client, namespace)
    answer = (
        "Deployed. the api token: hunter\nnext steps follow; key sk-proj-AbCdEfGhIjKlMnOp1234 " + "y" * 60
    )
    await history.append(
        "thread",
        ChatMessage(role="user", content="deploy it", name="lead"),
        ChatMessage(role="assistant", content=answer, name="ops"),
    )
    summary = await history.summary("thread")
    assert summary is not None and summary.startswith("Goal: deploy it")
    assert "hunter" not in summary and "sk-proj" not in summary and "[SECRET]" in summary
    await client.hset(history._key("thread", "meta"), "goal", b"\xff\xfe bad")
    await client.rpush(history._key("thread", "messages"), b'{"role":"user","content":"\xff"}')
    with pytest.raises(Unavailable, match="not UTF-8"):  # a client decoding replies: typed
        await history.summary("thread")
    with pytest.raises(Unavailable, match="not UTF-8"):
        await history.messages("thread")
    raw = aioredis.Redis.from_url(redis_url)  # one that hands bytes over: read around them
    try:
        plain = HistoryStore(raw, namespace)
        assert len(await plain.messages("thread")) == 2  # the undecodable one left out
        summary = await plain.summary("thread")
        assert summary is not None and summary.startswith("Goal: \ufffd\ufffd bad")
    finally:
        await raw.aclose()
