"""The console's pieces that need no server: links to Jaeger, rows, ``a2a watch`` lines for
calls still running and edited drafts, the demo's server lines, and a task's journal as the
tasks view reads it (a store in memory)."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any, cast
from urllib.parse import parse_qs, urlsplit

import pytest

from a2a.console.demo import server_lines
from a2a.console.feed import Event
from a2a.console.links import Jaeger
from a2a.console.rows import session_row
from a2a.console.tasks import SHOWN_EVENTS, TaskNotFound, TaskView
from a2a.console.watch import Watcher
from a2a.core.runtime import Runtime
from a2a.core.task_handle import Task
from a2a.sessions.model import Session, Turn
from a2a.stores.audit import AuditRecord
from bus.durable import TaskClient, TaskEvent, TaskOutcome, TaskRecord, TaskStore, keys
from bus.durable.wire import now_ms
from bus.subjects import Subjects
from transports.durable import MemoryDurable


def record(**fields: Any) -> AuditRecord:
    base: dict[str, Any] = {
        "request_id": "r1",
        "conversation_id": "c1",
        "origin": "planner",
        "target": "coder",
        "action": "run",
        "outcome": "ok",
        "side": "callee",
        "started_at": 1_700_000_000_000,
        "duration_ms": 1200.0,
    }
    return AuditRecord(**{**base, **fields})


def test_jaeger_links_search_the_call_trees_spans_by_tag() -> None:
    jaeger = Jaeger.checked("https://tracing.example/jaeger/", "a2a-{agent}")
    link = urlsplit(jaeger.link(record(correlation_id="root", target="coder,tester")))
    assert link.netloc == "tracing.example" and link.path == "/jaeger/search"
    query = {k: v for k, [v] in parse_qs(link.query).items()}
    assert query["service"] == "a2a-coder"
    assert json.loads(query["tags"]) == {"a2a.correlation_id": "root"}
    assert int(query["start"]) == (1_700_000_000_000 - 60_000) * 1000
    assert int(query["end"]) == (1_700_000_000_000 + 1200 + 60_000) * 1000
    first_hop = parse_qs(urlsplit(jaeger.link(record())).query)
    assert json.loads(first_hop["tags"][0]) == {"a2a.correlation_id": "r1"}  # its own request id


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("javascript:alert(1)", r"not an http\(s\) URL"),
        ("ftp://jaeger", r"not an http\(s\) URL"),
        ("http://", r"not an http\(s\) URL"),
        ("http://user:secret@jaeger:16686", "credentials"),
        ("http://jaeger:16686/?x=1", "base URL"),
    ],
)
def test_a_jaeger_url_is_checked(url: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        Jaeger.checked(url)
    assert Jaeger.from_env({"A2A_JAEGER_URL": url}) is None  # logged, and calls go without links


def test_jaeger_from_the_environment() -> None:
    assert Jaeger.from_env({}) is None
    assert Jaeger.from_env({"A2A_JAEGER_URL": " http://j:16686 "}) == Jaeger("http://j:16686", "{agent}")
    env = {"A2A_JAEGER_URL": "http://j:16686", "A2A_JAEGER_SERVICE": "gateway"}
    assert Jaeger.from_env(env) == Jaeger("http://j:16686", "gateway")


def session(*turns: Turn) -> Session:
    return Session(
        id="s1", user_id="u", profile_id="drafter", remote="reviewer", objective="o", turns=list(turns)
    )


def test_a_sessions_row_keeps_who_sent_each_turn() -> None:
    s = session(
        Turn(index=0, role="local_agent", text="a", at=1.0, sent_by="user_approved"),
        Turn(index=1, role="remote_agent", text="b", at=2.0),
        Turn(index=2, role="local_agent", text="c", at=3.0, sent_by="user_edited"),
        Turn(index=3, role="user", text="d", at=4.0, sent_by="user_written"),
    )
    row = session_row(s)
    assert [t["sentBy"] for t in row["turns"]] == ["user_approved", None, "user_edited", "user_written"]
    assert row["profileId"] == "drafter" and row["draft"] is None  # every field, by its wire name


def test_watch_prints_a_running_call_once_and_its_end_after() -> None:
    w = Watcher()
    running = record(outcome="running", duration_ms=600.0)
    assert w.lines(Event("call", running)) == ["planner calling coder with task: run"]
    assert w.lines(Event("call", running)) == []  # announced once
    assert w.lines(Event("call", record(tokens=120))) == ["coder returned: SUCCESS (120 tokens, 1.20 s)"]
    assert w.lines(Event("call", record(outcome="running"))) == []  # late: it has ended
    quick = record(request_id="r2")
    assert w.lines(Event("call", quick)) == [
        "planner calling coder with task: run",
        "coder returned: SUCCESS (0 tokens, 1.20 s)",
    ]


def test_watch_labels_an_edited_draft() -> None:
    s = session(Turn(index=0, role="local_agent", text="my edit", at=1.0, sent_by="user_edited"))
    s.state = "waiting_remote"
    [turn, _] = Watcher().lines(Event("session", s, "u"))
    assert turn == "session s1 [drafter -> reviewer, manual] turn 0: Local Agent (user-edited): my edit"


def test_the_demo_prints_its_servers_without_credentials() -> None:
    settings = SimpleNamespace(
        nats_url="nats://u:p@127.0.0.1:4222,nats://h2:4222", redis_url="redis://:pw@r:6379/0"
    )
    runtime = cast(Runtime, SimpleNamespace(settings=settings))
    assert server_lines(runtime) == ["NATS   nats://127.0.0.1:4222,nats://h2:4222", "Redis  redis://r:6379/0"]


async def _task_view() -> tuple[TaskView, TaskStore, keys.TaskKeys]:
    """A TaskView over a store in memory holding one task of alice's (the runtime stubbed)."""

    store = TaskStore(MemoryDurable())
    client = TaskClient(store, Subjects("t", "console"))
    at = now_ms()
    record = TaskRecord(
        task_id="t1", agent="worker", action="run", conversation_id="c1", submitted_at=at,
        deadline=at + 60_000, owner="alice", sender="console",
    )  # fmt: skip
    await store.create(keys.record("console", "t1"), record)

    async def get(task_id: str, user: str | None) -> Task:
        return Task(client, await client.record(task_id, user), created=False)

    tasks = SimpleNamespace(store=store, get=get, max_ttl=3600.0)
    return TaskView(cast(Any, tasks)), store, keys.TaskKeys.of(record)


@pytest.mark.anyio
async def test_a_long_journal_shows_its_tail_and_is_read_on_from_where_it_stopped() -> None:

    view, store, at = await _task_view()
    assert (await view.detail("alice", "t1"))["state"] == "queued"
    events = [TaskEvent(kind="attempt", attempt=1, at=1000, instance="worker-a")]
    events += [TaskEvent(kind="progress", attempt=1, at=1001, data={"i": i}) for i in range(448)]
    events += [TaskEvent(kind="handed-back", attempt=1, at=1002, message="handed back: its instance stopped")]
    for n, event in enumerate(events, 1):
        await store.create(at.event(n), event)
    view = TaskView(view.tasks)  # a console started now: the journal is new to it
    waiting = await view.detail("alice", "t1")
    assert waiting["state"] == "queued" and waiting["attempts"] == 1 and waiting["startedAt"] == 1000
    assert len(waiting["events"]) == SHOWN_EVENTS and waiting["earlier"] == 450 - SHOWN_EVENTS
    assert waiting["events"][-1]["n"] == 450 and waiting["events"][-1]["kind"] == "handed-back"

    await store.create(at.event(451), TaskEvent(kind="attempt", attempt=2, at=2000, instance="worker-b"))
    running = await view.detail("alice", "t1")
    assert running["state"] == "running" and running["attempts"] == 2
    assert [e["n"] for e in running["events"]][-2:] == [450, 451]

    await store.create(at.outcome, TaskOutcome(state="failed", attempt=2, finished_at=3000))
    ended = await view.detail("alice", "t1")
    assert ended["state"] == "failed" and ended["endedAt"] == 3000 and ended["ended"]
    assert ended["events"][-1] == {**ended["events"][-1], "kind": "ended", "n": 452, "state": "failed"}
    with pytest.raises(TaskNotFound):
        await view.detail("bob", "t1")
