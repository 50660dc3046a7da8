"""An a2a-sdk 1.3 agent that behaves like the A2A TCK's reference agent; runs only in the SDK venv.

Serves the same interfaces and card as ``echo_server`` (its flags too, ``--push`` among
them). Its executor is the TCK's reference one (``python-sut/tck_core_agent/agent_executor.py``
of ``a2aproject/a2a-tck``, written for a2a-sdk 0.3) in 1.3's API, with the schedule and
answers of ``paced.py``: a new task is ``submitted``, reports ``working`` 0.5 s later,
and 0.7 s after that gets one text artifact named ``response`` and ``completed`` with the
same text as its status message. A message to a completed or canceled task does nothing
(the reference's rule; a2a-sdk refuses such messages before they reach it). Cancelling a
running task stops it where it waits and publishes ``canceled``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib

from a2a.helpers import new_task, new_text_artifact, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types.a2a_pb2 import AgentCard, TaskArtifactUpdateEvent, TaskState
from echo_server import ASGIApp, build_app, main_with, parse_args
from paced import BEFORE_WORKING, FINISHING, WORKING, reply

DESCRIPTION = "Answers like the A2A TCK's reference agent, in about 1.2 seconds (an a2a-sdk interop agent)."
DONE = (TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_CANCELED)


class PacedExecutor(AgentExecutor):
    """The TCK's reference executor: submitted, working after 0.5 s, completed after 1.2 s."""

    def __init__(self) -> None:
        self.cancelled: dict[str, asyncio.Event] = {}

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        message = context.message
        task_id, context_id = context.task_id or "", context.context_id or ""
        if message is None:
            raise ValueError("no message in the request")
        task = context.current_task
        if task is None:
            await event_queue.enqueue_event(
                new_task(task_id, context_id, TaskState.TASK_STATE_SUBMITTED, history=[message])
            )
        elif task.status.state in DONE:
            return
        cancelled = self.cancelled.setdefault(task_id, asyncio.Event())
        updater = TaskUpdater(event_queue, task_id, context_id)

        async def stopped_after(seconds: float) -> bool:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(cancelled.wait(), seconds)
            return cancelled.is_set()  # then cancel() has published the canceled state

        try:
            await updater.submit()
            if await stopped_after(BEFORE_WORKING):
                return
            await updater.start_work()
            if await stopped_after(WORKING):
                return
            answer = reply(context.get_user_input())
            if await stopped_after(FINISHING):
                return
            artifact = new_text_artifact(
                name="response", description="Agent response to user message.", text=answer
            )
            await event_queue.enqueue_event(
                TaskArtifactUpdateEvent(
                    task_id=task_id, context_id=context_id, artifact=artifact, last_chunk=True
                )
            )
            await updater.complete(updater.new_agent_message([new_text_part(answer)]))
        finally:
            self.cancelled.pop(task_id, None)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task_id = context.task_id or ""
        event = self.cancelled.get(task_id)
        if event is not None:
            event.set()
        await TaskUpdater(event_queue, task_id, context.context_id or "").cancel()


def build_paced_app(args: argparse.Namespace, card: AgentCard) -> ASGIApp:
    card.description = DESCRIPTION
    return build_app(args, card, PacedExecutor())


def main(argv: list[str] | None = None) -> None:
    main_with(parse_args(argv), build_paced_app)


if __name__ == "__main__":
    main()
