"""Secrets in a delegated task, objective, result or error stay out of everything that leaves the
process: the history previews in Redis, the audit records in JetStream and the spans.

One runtime on a real nats-server and Redis serves a boss that delegates and a worker; the
test reads back what each store kept, and every span the runtime made (in memory).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from a2a import A2AError, Agent, Context, Runtime, Settings
from a2a.observability.telemetry import Telemetry
from a2a.stores.audit import AuditFilter, AuditRecord, read_audit
from transports import NatsTransport

pytestmark = [pytest.mark.anyio, pytest.mark.integration, pytest.mark.security]

# Each secret is a distinct string, so a leak says which one leaked.
TASK = 'Deploy with Authorization: Basic dXNlcjpzM2NyM3Q= and {"password": "hunter2-TASK"}'
OBJECTIVE = (
    "rotate aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY on redis://:objpass@cache"
)
OUTPUT = 'connected with {"password": "hunter2-OUTPUT"} as AKIAIOSFODNN7EXAMPLE'
ERROR = "cannot log in to postgres://app:errpass123@db/app"
SECRETS = (
    "dXNlcjpzM2NyM3Q=",
    "hunter2-TASK",
    "wJalrXUtnFEMI",
    "objpass",
    "hunter2-OUTPUT",
    "AKIAIOSFODNN7EXAMPLE",
    "errpass123",
    "plainpw-PARAM",
    "nestedpw-PARAM",
)

boss = Agent("boss")
worker = Agent("worker")


@boss.action("delegate")
async def _delegate(ctx: Context, params: dict[str, Any]) -> Any:
    try:
        response = await ctx.delegate(
            "worker", params["task"], objective=params["objective"], action=params["action"]
        )
    except A2AError as exc:  # the failed delegation is recorded all the same
        return {"status": "failed", "code": exc.code}
    return {"status": response.status, "result": response.result}


@worker.action("work")
async def _work(ctx: Context, params: dict[str, Any]) -> str:
    return OUTPUT


@worker.action("fail")
async def _fail(ctx: Context, params: dict[str, Any]) -> str:
    raise RuntimeError(ERROR)


def leaks(text: object) -> list[str]:
    return [s for s in SECRETS if s in str(text)]


@pytest.fixture
async def traced(settings: Settings) -> AsyncIterator[tuple[Runtime, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    async with Runtime(settings, telemetry=Telemetry(provider, payloads=True)) as rt:
        await rt.serve(boss, worker)
        yield rt, exporter


async def _delegate_both(rt: Runtime) -> str:
    conversation = uuid.uuid4().hex
    for action in ("work", "fail"):
        params = {
            "task": TASK,
            "objective": f"{OBJECTIVE} ({action})",  # the same objective again would be a loop
            "action": action,
            "db_password": "plainpw-PARAM",
            "credentials": {"user": "bob", "value": "nestedpw-PARAM"},
        }
        await rt.call("boss", "delegate", params, user_id="alice", conversation_id=conversation)
    return conversation


async def test_history_previews_hold_no_secret(traced: tuple[Runtime, InMemorySpanExporter]) -> None:
    rt, _ = traced
    conversation = await _delegate_both(rt)
    assert rt.history is not None
    interactions = await rt.history.interactions(conversation)
    assert [(i.target, i.success) for i in interactions] == [("worker", True), ("worker", False)]
    for i in interactions:
        assert not leaks(i.task) and not leaks(i.output_preview), i
        assert "Authorization: Basic [SECRET]" in i.task and '"password": "[SECRET]"' in i.task
    assert '"password": "[SECRET]"' in interactions[0].output_preview
    assert "postgres://app:[SECRET]@db/app" in interactions[1].output_preview


async def test_audit_records_hold_no_secret(traced: tuple[Runtime, InMemorySpanExporter]) -> None:
    rt, _ = traced
    conversation = await _delegate_both(rt)
    transport = rt.bus.transport
    assert isinstance(transport, NatsTransport)
    records: list[AuditRecord] = []
    with anyio.fail_after(10):  # records are published in batches after each reply
        while sum(r.target == "worker" for r in records) < 2:
            await anyio.sleep(0.05)
            records = await read_audit(
                transport, rt.settings.namespace, AuditFilter(conversation_id=conversation)
            )
    for record in records:
        assert not leaks(record), record
    delegated = [r for r in records if r.target == "worker"]
    assert all(r.objective and "aws_secret_access_key = [SECRET]" in r.objective for r in delegated)
    failed = next(r for r in delegated if r.outcome != "ok")
    assert failed.error_message and "postgres://app:[SECRET]@db/app" in failed.error_message


def _span_text(span: ReadableSpan) -> str:
    parts = [span.name, str(dict(span.attributes or {})), span.status.description or ""]
    parts += [f"{e.name} {dict(e.attributes or {})}" for e in span.events]
    return "\n".join(parts)


async def test_spans_hold_no_secret(traced: tuple[Runtime, InMemorySpanExporter]) -> None:
    rt, exporter = traced
    await _delegate_both(rt)
    spans = exporter.get_finished_spans()
    names = {s.name for s in spans}
    assert {"send boss.delegate", "process boss.delegate", "send worker.work", "process worker.fail"} <= names
    for span in spans:
        assert not leaks(_span_text(span)), _span_text(span)
    failed = next(s for s in spans if s.name == "process worker.fail")
    assert failed.status.description == "AGENT_ERROR: cannot log in to postgres://app:[SECRET]@db/app"
    sent = next(s for s in spans if s.name == "send boss.delegate")
    parameters = str((sent.attributes or {})["a2a.parameters"])
    assert '"db_password":"[SECRET]"' in parameters and '"credentials":"[SECRET]"' in parameters
    assert "Basic [SECRET]" in parameters
