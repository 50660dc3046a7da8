"""0.3 requests to 1.0 ones and back: the send request of either dialect, the JSON-RPC params.

Beyond renaming (see ``compat03``), the rules are the SDK's: ``blocking`` is
``not returnImmediately``; a 0.3 ``historyLength`` of 0 means "the whole history", so it is
left unset in 1.0; a 0.3 push configuration's ``schemes`` list becomes the single 1.0
``scheme`` (its first element). ``tasks/pushNotificationConfig/get``, ``list`` and ``delete``
name the task with ``id`` and the configuration with ``pushNotificationConfigId``.

An absent ``blocking`` means blocking in JSON-RPC but, being protobuf's false, non-blocking
in REST; each dialect's Struct default says which. A REST send configuration is read and
written without a push configuration (its Struct has none).
"""

from __future__ import annotations

from typing import Any

from .codec import convert
from .compat03 import message_from_03, message_to_03
from .compat03_decode import infer_part_kinds
from .dialects03 import JSONRPC_03, Dialect03, build
from .methods import (
    AuthenticationInfo,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    SendMessageConfiguration,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskPushNotificationConfig,
)
from .types03 import (
    MessageSendConfiguration03,
    MessageSendParams03,
    PushNotificationAuthenticationInfo03,
    PushNotificationConfig03,
    PushNotificationConfigParams03,
    TaskIdParams03,
    TaskPushNotificationConfig03,
    TaskQueryParams03,
)
from .types03_rest import SendConfigurationPb03, SendMessageRequestPb03

__all__ = [
    "get_task_request_to_03",
    "params_from_03",
    "push_config_from_03",
    "push_config_to_03",
    "send_request_from_03",
    "send_request_to_03",
    "task_id_request_to_03",
]


def push_config_from_03(config: PushNotificationConfig03, task_id: str = "") -> TaskPushNotificationConfig:
    auth = config.authentication
    return TaskPushNotificationConfig(
        id=config.id,
        task_id=task_id,
        url=config.url,
        token=config.token,
        authentication=AuthenticationInfo(
            scheme=auth.schemes[0] if auth.schemes else "", credentials=auth.credentials
        )
        if auth is not None
        else None,
    )


def push_config_to_03(config: TaskPushNotificationConfig) -> TaskPushNotificationConfig03:
    auth = config.authentication
    inner = PushNotificationConfig03(
        url=config.url,
        id=config.id,
        token=config.token,
        authentication=PushNotificationAuthenticationInfo03(
            schemes=[auth.scheme] if auth.scheme else [], credentials=auth.credentials
        )
        if auth is not None
        else None,
    )
    return TaskPushNotificationConfig03(task_id=config.task_id, push_notification_config=inner)


def send_request_from_03(
    params: MessageSendParams03 | SendMessageRequestPb03, dialect: Dialect03 = JSONRPC_03
) -> SendMessageRequest:
    """The 1.0 request for 0.3 send params (JSON-RPC) or a 0.3 send body (REST)."""
    config = _configuration_from_03(params.configuration) if params.configuration is not None else None
    message = message_from_03(params.message, dialect)
    return SendMessageRequest(message=message, configuration=config, metadata=params.metadata)


def _configuration_from_03(
    config: MessageSendConfiguration03 | SendConfigurationPb03,
) -> SendMessageConfiguration:
    push = getattr(config, "push_notification_config", None)  # absent from the REST Struct
    return SendMessageConfiguration(
        accepted_output_modes=config.accepted_output_modes,
        task_push_notification_config=push_config_from_03(push) if push is not None else None,
        history_length=config.history_length or None,
        return_immediately=config.blocking is False,
    )


def send_request_to_03(
    request: SendMessageRequest, dialect: Dialect03 = JSONRPC_03
) -> MessageSendParams03 | SendMessageRequestPb03:
    """0.3 send params (JSON-RPC) or body (REST) for a 1.0 send; ``blocking`` always stated."""
    config = request.configuration or SendMessageConfiguration()
    push = config.task_push_notification_config
    configuration = build(
        dialect.structs.send_configuration,
        accepted_output_modes=config.accepted_output_modes,
        blocking=not config.return_immediately,
        history_length=config.history_length,
        push_notification_config=push_config_to_03(push).push_notification_config if push else None,
    )
    return build(
        dialect.structs.send_request,
        message=message_to_03(request.message, dialect),
        configuration=configuration,
        metadata=request.metadata,
    )


def params_from_03(method: str, params: Any) -> Any:
    """Validate the ``params`` of a 0.3 JSON-RPC call and convert them to the 1.0 request.

    ``method`` is the 0.3 method name. Raises ``msgspec.ValidationError`` for bad params and
    ``KeyError`` for a method 0.3 does not have.
    """
    body = infer_part_kinds(params if params is not None else {})
    if method in ("message/send", "message/stream"):
        return send_request_from_03(convert(body, MessageSendParams03))
    if method == "tasks/get":
        q = convert(body, TaskQueryParams03)
        return GetTaskRequest(id=q.id, history_length=q.history_length or None)
    if method == "tasks/cancel":
        c = convert(body, TaskIdParams03)
        return CancelTaskRequest(id=c.id, metadata=c.metadata)
    if method == "tasks/resubscribe":
        return SubscribeToTaskRequest(id=convert(body, TaskIdParams03).id)
    if method == "tasks/pushNotificationConfig/set":
        s = convert(body, TaskPushNotificationConfig03)
        return push_config_from_03(s.push_notification_config, s.task_id)
    if method == "agent/getAuthenticatedExtendedCard":
        return GetExtendedAgentCardRequest()
    ref = convert(body, PushNotificationConfigParams03)
    if method == "tasks/pushNotificationConfig/get":
        return GetTaskPushNotificationConfigRequest(task_id=ref.id, id=ref.push_notification_config_id)
    if method == "tasks/pushNotificationConfig/list":
        return ListTaskPushNotificationConfigsRequest(task_id=ref.id)
    if method == "tasks/pushNotificationConfig/delete":
        return DeleteTaskPushNotificationConfigRequest(task_id=ref.id, id=ref.push_notification_config_id)
    raise KeyError(method)


def get_task_request_to_03(request: GetTaskRequest) -> TaskQueryParams03:
    return TaskQueryParams03(id=request.id, history_length=request.history_length)


def task_id_request_to_03(request: CancelTaskRequest | SubscribeToTaskRequest) -> TaskIdParams03:
    metadata = request.metadata if isinstance(request, CancelTaskRequest) else None
    return TaskIdParams03(id=request.id, metadata=metadata)
