"""Multi-turn tasks: a follow-up message answers the question of a task waiting for input.

An agent that needs input ends its turn with INPUT_REQUIRED (a LangGraph ``interrupt()``,
an AutoGen handoff, a remote A2A agent's ``input-required``): the task waits in state
``TASK_STATE_INPUT_REQUIRED`` with nothing running, its question as the status message. A
message naming the task (``taskId``) continues it: the agent that asked is called again
with the parameters its question gave (``details.resume``) and the answer as ``resume``
(the message's text, else its first data part), on any replica and any instance.
"""

from __future__ import annotations

import msgspec

from transports.a2a_http import A2AProtocolError, Message
from transports.a2a_http import errors as e

from .mapping import BadMessage, CallPlan, answer_of, status
from .tasks import StoredTask

__all__ = ["WAITING", "follow_up"]

WAITING = "TASK_STATE_INPUT_REQUIRED"


def follow_up(
    stored: StoredTask, message: Message, default_timeout: float, max_timeout: float
) -> tuple[CallPlan, float]:
    """The call that continues ``stored`` with ``message``, which joins its history, and its
    timeout (the task's own, else ``default_timeout``); the task is working again.

    Raises:
        A2AProtocolError: the task does not wait for input, or the message answers nothing.
    """
    task = stored.task
    if task.status.state != WAITING or stored.resume is None:
        raise A2AProtocolError(
            e.UNSUPPORTED_OPERATION,
            f"task {task.id} is {task.status.state}: it takes no further messages; "
            "send a new message without taskId",
        )
    if message.context_id and message.context_id != task.context_id:
        raise A2AProtocolError(e.INVALID_PARAMS, f"contextId: task {task.id} is of context {task.context_id}")
    try:
        answer = answer_of(message)
    except BadMessage as exc:
        raise A2AProtocolError(e.INVALID_PARAMS, str(exc)) from None
    action = (task.metadata or {}).get("action")
    plan = CallPlan(stored.asked or stored.agent, str(action or ""), {**stored.resume, "resume": answer})
    joined = msgspec.structs.replace(message, context_id=task.context_id, task_id=task.id)
    task.history = [*task.history, joined]
    task.status = status("TASK_STATE_WORKING")
    stored.resume = None
    timeout_ms = (task.metadata or {}).get("timeoutMs")
    timeout = timeout_ms / 1000 if isinstance(timeout_ms, int | float) and timeout_ms > 0 else default_timeout
    return plan, min(timeout, max_timeout)
