"""One A2A operation on the gateway service, in 1.0 types, whatever binding or version named it."""

from __future__ import annotations

import hashlib
from typing import Any

import msgspec

from bus.errors import A2AError
from transports.a2a_http import (
    A2AProtocolError,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    SendMessageRequest,
    SendMessageResponse,
    StreamResponse,
    SubscribeToTaskRequest,
    TaskPushNotificationConfig,
)
from transports.a2a_http import errors as e
from transports.a2a_http.jsonrpc import Operation

from .follow import events_of
from .push_store import StoredConfig
from .runs import Receiving, Run, snapshot, trimmed
from .service import GatewayService
from .subscriptions import Events

__all__ = ["stream", "unary"]


def _unavailable(error: A2AError) -> A2AProtocolError:
    """The gateway's own dependencies failing (Redis away): an internal error, said plainly."""
    return A2AProtocolError(e.INTERNAL_ERROR, f"the gateway cannot serve this now ({error.code}); try again")


async def unary(
    service: GatewayService, op: Operation, request: Any, principal: str, agent: str | None
) -> Any:
    """The result of a non-streaming operation (a 1.0 wire Struct)."""
    try:
        return await _unary(service, op, request, principal, agent)
    except A2AError as exc:
        raise _unavailable(exc) from None


async def _unary(
    service: GatewayService, op: Operation, request: Any, principal: str, agent: str | None
) -> Any:
    match op:
        case Operation.SEND_MESSAGE:
            assert isinstance(request, SendMessageRequest)
            run, _ = await _send(service, principal, request, agent, listen=False)
            config = request.configuration
            if config is None or not config.return_immediately:
                await run.done.wait()
            history = config.history_length if config is not None else None
            return SendMessageResponse(task=trimmed(run.task, history))
        case Operation.GET_TASK:
            assert isinstance(request, GetTaskRequest)
            return await service.get(principal, request.id, request.history_length, agent)
        case Operation.LIST_TASKS:
            assert isinstance(request, ListTasksRequest)
            return await service.list(principal, request, agent)
        case Operation.CANCEL_TASK:
            assert isinstance(request, CancelTaskRequest)
            return await service.cancel(principal, request.id, agent)
        case Operation.GET_EXTENDED_CARD:
            raise A2AProtocolError(e.EXTENDED_CARD_NOT_CONFIGURED)
        case Operation.CREATE_PUSH_CONFIG:
            assert isinstance(request, TaskPushNotificationConfig)
            return await service.push.create(principal, request, agent)
        case Operation.GET_PUSH_CONFIG:
            assert isinstance(request, GetTaskPushNotificationConfigRequest)
            return await service.push.get(principal, request, agent)
        case Operation.LIST_PUSH_CONFIGS:
            assert isinstance(request, ListTaskPushNotificationConfigsRequest)
            return await service.push.list(principal, request, agent)
        case Operation.DELETE_PUSH_CONFIG:
            assert isinstance(request, DeleteTaskPushNotificationConfigRequest)
            return await service.push.delete(principal, request, agent)
    raise A2AProtocolError(e.METHOD_NOT_FOUND)


async def _send(
    service: GatewayService, principal: str, request: SendMessageRequest, agent: str | None, *, listen: bool
) -> tuple[Run, Receiving | None]:
    """``service.send``, with the push configuration of ``request.configuration`` checked
    first and attached to the new task (told every event of it)."""
    given = request.configuration.task_push_notification_config if request.configuration else None
    prepared: StoredConfig | None = None
    if given is not None:
        if not given.id:  # named after the message: the same message again attaches nothing more
            digest = hashlib.sha256(request.message.message_id.encode()).hexdigest()[:32]
            given = msgspec.structs.replace(given, id="message-" + digest)
        prepared = await service.push.prepare(principal, given)
    run, receive = await service.send(principal, request, agent=agent, listen=listen)
    if prepared is not None and prepared.config.id not in await service.push.store.config_ids(run.task.id):
        await service.push.attach(run.stored, prepared, sent=0)
    return run, receive


async def stream(
    service: GatewayService,
    op: Operation,
    request: Any,
    principal: str,
    agent: str | None,
    after: int | None = None,
) -> Events:
    """The events of a streaming operation; errors before the first event raise here, at once.
    ``after``: the number of the last event a resuming client got (``SubscribeToTask``).

    ``None`` in the stream is a keep-alive: nothing happened for a while.
    """
    try:
        return await _stream(service, op, request, principal, agent, after)
    except A2AError as exc:
        raise _unavailable(exc) from None


async def _stream(
    service: GatewayService, op: Operation, request: Any, principal: str, agent: str | None, after: int | None
) -> Events:
    if op is Operation.SEND_STREAMING_MESSAGE:
        assert isinstance(request, SendMessageRequest)
        run, receive = await _send(service, principal, request, agent, listen=True)
        assert receive is not None
        return events_of(StreamResponse(task=snapshot(run.task)), receive)
    if op is Operation.SUBSCRIBE_TO_TASK:
        assert isinstance(request, SubscribeToTaskRequest)
        return await service.subscribe(principal, request.id, agent, after)
    raise A2AProtocolError(e.METHOD_NOT_FOUND)
