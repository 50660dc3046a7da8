"""``ListTasks``: a page of a user's tasks, as the protocol asks for it."""

from __future__ import annotations

import msgspec

from transports.a2a_http import A2AProtocolError, ListTasksRequest, ListTasksResponse
from transports.a2a_http import errors as e

from .runs import trimmed
from .tasks import TaskStore, decode_token, encode_token, parse_timestamp

__all__ = ["list_tasks"]


async def list_tasks(
    store: TaskStore, principal: str, request: ListTasksRequest, agent: str | None
) -> ListTasksResponse:
    """A page of ``principal``'s tasks, newest first; on an agent's endpoint, those sent to ``agent``.

    Raises:
        A2AProtocolError: INVALID_PARAMS for a bad page token, size or timestamp.
    """
    try:
        offset = decode_token(request.page_token)
    except ValueError as exc:
        raise A2AProtocolError(e.INVALID_PARAMS, str(exc)) from None
    size = 50 if request.page_size is None else request.page_size  # 0 is a size, not "unset": refused
    if not 1 <= size <= 100:
        problem = f"pageSize must be between 1 and 100 (leave it out for 50), got {size}"
        violation = {"field": "pageSize", "message": problem}
        raise A2AProtocolError(e.INVALID_PARAMS, problem, {"errors": [violation]})
    after_text = request.status_timestamp_after
    try:
        after = parse_timestamp(after_text) if after_text else None
    except ValueError:
        raise A2AProtocolError(e.INVALID_PARAMS, "statusTimestampAfter: an RFC 3339 timestamp") from None
    state = request.status if request.status != "TASK_STATE_UNSPECIFIED" else None
    found, total, following = await store.page(
        principal,
        offset=offset,
        size=size,
        context_id=request.context_id,
        state=state,
        after=after,
        agent=agent,
    )
    tasks = []
    for stored in found:
        task = trimmed(stored.task, request.history_length)
        if not request.include_artifacts and task.artifacts:
            task = msgspec.structs.replace(task, artifacts=[])
        tasks.append(task)
    token = encode_token(following) if following is not None else ""
    return ListTasksResponse(tasks=tasks, next_page_token=token, page_size=size, total_size=total)
