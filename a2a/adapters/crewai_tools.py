"""Bus tools as CrewAI tools (:func:`crewai_tools`)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from crewai.tools import BaseTool
from crewai.tools.tool_failure import ToolFailure
from crewai.utilities.string_utils import sanitize_tool_name
from pydantic import ConfigDict, Field, PrivateAttr, create_model

from bus.errors import A2AError, InvalidParams

from . import bridge
from .crewai_run import run_in_handler
from .tools import BusTool

__all__ = ["crewai_tools"]

_SCALARS: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool}
_LISTS: dict[str, Any] = {
    "string": list[str],
    "integer": list[int],
    "number": list[float],
    "boolean": list[bool],
}


def crewai_tools(tools: Sequence[BusTool]) -> list[BaseTool]:
    """CrewAI tools that make the bus calls of ``tools``.

    CrewAI derives the schema a model sees from a pydantic model and makes it strict (every
    property required, no others allowed), so a schema cannot go to the model as it is. A
    tool whose schema lists flat properties (strings, numbers, booleans, enums, lists of those)
    gets them as fields, with their descriptions (an optional one may be sent as null); any
    other (nested objects, a free-form ``{"type": "object"}``, ``anyOf``...) takes one
    ``arguments`` string holding the JSON object, described by the schema, which a strict
    schema can still carry. Results are never cached by CrewAI: each use is a bus call.

    The model reads a call's result as text (a JSON result as JSON). A limit, deadline,
    cancellation or permission error stops the crew and ends the call as itself; any other
    (AGENT_ERROR, NO_RESPONDERS, INVALID_PARAMS, ...) is a failed tool result
    ``"error: CODE from AGENT: message"`` (a ``ToolFailure``: the model reads it and may try otherwise).
    """
    return [_CrewBusTool(tool) for tool in tools]


def _never(arguments: Any, result: Any) -> bool:
    return False


class _CrewBusTool(BaseTool):
    """A bus tool as a CrewAI tool."""

    _bus: BusTool = PrivateAttr()
    _required: frozenset[str] = PrivateAttr()
    _as_json: bool = PrivateAttr()

    def __init__(self, tool: BusTool) -> None:
        schema = tool.input_schema
        fields = _fields(schema)
        as_json = fields is None
        if fields is None:
            fields = {"arguments": (str, Field(description=_json_hint(schema)))}
        model = create_model(f"{tool.name}_arguments", __config__=ConfigDict(extra="forbid"), **fields)
        super().__init__(
            name=tool.name, description=tool.description, args_schema=model, cache_function=_never
        )
        self._bus, self._as_json = tool, as_json
        bridge.mark_bus_tool(sanitize_tool_name(tool.name))  # the name CrewAI's hooks see
        self._required = frozenset(schema.get("required", ()))

    def _run(self, **kwargs: Any) -> Any:
        try:
            return run_in_handler(self._bus.run_text(self._arguments(kwargs)))
        except bridge.PROPAGATED:
            raise
        except A2AError as exc:
            return ToolFailure(message=bridge.tool_error_text(exc), details={"code": exc.code})

    def _arguments(self, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        if not self._as_json:  # a strict schema sends every field: null for optional ones left out
            return {k: v for k, v in kwargs.items() if v is not None or k in self._required}
        try:
            arguments = json.loads(kwargs.get("arguments") or "{}")
        except (TypeError, ValueError) as exc:
            raise InvalidParams(f"'arguments' is not JSON: {exc}") from None
        if not isinstance(arguments, dict):
            raise InvalidParams("'arguments' must hold a JSON object")
        return arguments


def _fields(schema: Mapping[str, Any]) -> dict[str, Any] | None:
    """pydantic fields for a schema of flat properties, or None for any other schema."""
    properties = schema.get("properties")
    if schema.get("type", "object") != "object" or not isinstance(properties, Mapping) or not properties:
        return None
    required = set(schema.get("required", ()))
    fields: dict[str, Any] = {}
    for key, spec in properties.items():
        kind = _type(spec) if isinstance(spec, Mapping) and key.isidentifier() else None
        if kind is None:
            return None
        description = spec.get("description") if isinstance(spec.get("description"), str) else None
        if key in required:
            fields[key] = (kind, Field(description=description))
        else:
            fields[key] = (kind | None, Field(default=None, description=description))
    return fields


def _type(spec: Mapping[str, Any]) -> Any:
    kind = spec.get("type")
    enum = spec.get("enum")
    if isinstance(enum, list) and enum and all(isinstance(v, str | int) for v in enum):
        return Literal[tuple(enum)]
    if isinstance(kind, str) and kind in _SCALARS:
        return _SCALARS[kind]
    items = spec.get("items")
    if kind == "array" and isinstance(items, Mapping):
        return _LISTS.get(items.get("type"))  # type: ignore[arg-type]
    return None


def _json_hint(schema: Mapping[str, Any]) -> str:
    text = json.dumps(schema, ensure_ascii=False, default=str)
    return "The arguments, as one JSON object meeting this JSON Schema: " + bridge.clip(text, 2000)
