"""Bus tools as AutoGen tools, for ``AssistantAgent(tools=...)`` and workbenches.

The model is shown each bus tool's JSON Schema as it is (AutoGen would otherwise derive
one from a pydantic model), and the arguments go to the callee unchanged, which checks
them against that schema.

Errors, as every adapter treats them: a bus error that ends the work (a limit such as
CYCLE_DETECTED or BUDGET_EXCEEDED, DEADLINE_EXCEEDED, CANCELLED, PERMISSION_DENIED) ends
the whole call with that typed error; any other bus error (AGENT_ERROR, NO_RESPONDERS,
INVALID_PARAMS, ...) reaches the model as ``error: CODE from AGENT: message`` (a result marked
``is_error``), so it can try something else. AgentChat's workbench turns every exception
of a tool into text for the model, so a tool records an ending error on the run it
belongs to (:data:`current_run`, set by :func:`a2a.adapters.autogen.from_autogen`),
which stops the run and raises it.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from typing import Any, Protocol, cast

from autogen_core import CancellationToken
from autogen_core.tools import BaseTool, ParametersSchema, ToolSchema
from pydantic import BaseModel, ConfigDict

from bus.errors import A2AError, Cancelled

from .bridge import PROPAGATED, mark_bus_tool, tool_error_text
from .tools import BusTool

__all__ = ["AutogenBusTool", "BusToolError", "Stoppable", "autogen_tools", "current_run"]


class Stoppable(Protocol):
    """The run a tool call belongs to."""

    def fail(self, exc: A2AError) -> None:
        """Stop the run; its handler raises ``exc``."""


current_run: ContextVar[Stoppable | None] = ContextVar("a2a_autogen_run", default=None)
"""The run of the handler the tool runs in (None outside :func:`~a2a.adapters.autogen.from_autogen`)."""


class BusToolError(RuntimeError):
    """A bus error the model may recover from, as AutoGen's tool error: the model reads
    ``error: CODE from AGENT: message`` in a result marked ``is_error``."""


class _Arguments(BaseModel):
    model_config = ConfigDict(extra="allow")


class AutogenBusTool(BaseTool[_Arguments, BaseModel]):
    """A :class:`~a2a.adapters.tools.BusTool` as an AutoGen tool (see the module's docstring)."""

    def __init__(self, tool: BusTool) -> None:
        super().__init__(_Arguments, BaseModel, tool.name, tool.description)
        self.bus_tool = tool
        mark_bus_tool(tool.name)

    @property
    def schema(self) -> ToolSchema:
        parameters = copy.deepcopy(dict(self.bus_tool.input_schema))
        parameters.setdefault("type", "object")
        parameters.setdefault("properties", {})
        return ToolSchema(
            name=self.name,
            description=self.description,
            parameters=cast(ParametersSchema, parameters),
            strict=False,
        )

    async def run(self, args: _Arguments, cancellation_token: CancellationToken) -> Any:
        return await self.call(args.model_dump())

    async def run_json(
        self, args: Mapping[str, Any], cancellation_token: CancellationToken, call_id: str | None = None
    ) -> Any:
        try:
            return await self.call(args)
        except asyncio.CancelledError:
            if not cancellation_token.is_cancelled():
                raise
            # The token cancelled this tool's own task (the bus call is withdrawn by now).
            # An AssistantAgent waits forever on a tool task that ends cancelled (its tool
            # loop's gather never reports back), which would leave a team's runtime busy:
            # end it with a result, so that the agent's turn and the team can wind down.
            return f"error: {Cancelled.code}: the run was stopped"

    async def call(self, arguments: Mapping[str, Any]) -> str:
        """Make the bus call from the handler this runs in; the callee's result as text."""
        try:
            return await self.bus_tool.run_text(arguments)
        except PROPAGATED as exc:
            run = current_run.get()
            if run is not None:
                run.fail(exc)
            raise
        except A2AError as exc:
            raise BusToolError(tool_error_text(exc)) from None

    def return_value_as_string(self, value: Any) -> str:
        return str(value)


def autogen_tools(tools: Sequence[BusTool]) -> list[BaseTool[Any, Any]]:
    """Bus tools as AutoGen tools: ``AssistantAgent(tools=autogen_tools([...]))``."""
    return [AutogenBusTool(tool) for tool in tools]
