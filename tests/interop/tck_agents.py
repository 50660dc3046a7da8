"""The bus agent ``tck_run.py --agent paced`` serves behind the gateway: the A2A TCK's reference agent.

It answers what the TCK's reference agent answers, on its schedule (``sdk/paced.py``, which
the a2a-sdk executor of ``sdk/paced_server.py`` follows too): 0.5 s after the call starts
it reports progress (the gateway streams a ``working`` status update), 0.7 s later it
returns the answer (the gateway's ``result`` artifact, and ``completed``). Cancelling the
task cancels the call, and so the handler, wherever it waits.
"""

from __future__ import annotations

from typing import Any

import anyio

from a2a import Agent, AgentCapability, Context
from tests.interop.sdk.paced import BEFORE_WORKING, FINISHING, WORKING, reply

paced = Agent(
    "paced",
    description="Answers like the A2A TCK's reference agent, in about 1.2 seconds",
    capabilities=[AgentCapability(id="answering", description="greets, or says your words back")],
    metadata={"defaultAction": "answer"},
)


@paced.action("answer", input_schema={"type": "object", "properties": {"text": {"type": "string"}}})
async def answer(ctx: Context, params: dict[str, Any]) -> str:
    await anyio.sleep(BEFORE_WORKING)
    await ctx.progress("working")
    await anyio.sleep(WORKING)
    text = reply(str(params.get("text", "")))
    await anyio.sleep(FINISHING)
    return text
