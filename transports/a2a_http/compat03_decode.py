"""Decoded 0.3 JSON made ready for validation: kinds JSON-RPC peers leave out, REST's snake_case.

Some 0.3 JSON-RPC peers leave out ``kind``, which the Structs need to tell parts and results
apart; ``infer_part_kinds`` and ``decode_result_03`` add it from the object's shape, as the
SDK client does. The SDK's 0.3 REST client writes snake_case keys (``{"request":
{"message_id": ...}}``); ``camelize`` turns them into the protobuf JSON names. Neither
touches user data: ``metadata`` values, and a data part's object, are copied as they are.
"""

from __future__ import annotations

from typing import Any

import msgspec

from .codec import convert
from .types03 import Message03, StreamResult03, Task03, TaskArtifactUpdateEvent03, TaskStatusUpdateEvent03

__all__ = ["camelize", "decode_result_03", "infer_part_kinds"]


# JSON-RPC: kinds ------------------------------------------------------------------------

_USER_DATA = frozenset({"metadata", "data", "params"})


def infer_part_kinds(obj: Any, key: str = "") -> Any:
    """A copy of decoded 0.3 JSON with ``kind`` added to parts that lack it.

    Only lists under a ``parts`` key are touched; ``metadata``, ``data`` and ``params`` values
    are user data and are copied as they are.
    """
    if isinstance(obj, list):
        return [infer_part_kinds(item, key) for item in obj]
    if not isinstance(obj, dict):
        return obj
    out = {k: (v if k in _USER_DATA else infer_part_kinds(v, k)) for k, v in obj.items()}
    if key == "parts" and "kind" not in out:
        kind = "text" if "text" in out else "file" if "file" in out else "data" if "data" in out else None
        if kind:
            out["kind"] = kind
    return out


def _result_kind(obj: dict[str, Any]) -> str | None:
    """The kind of a 0.3 result object, from ``kind`` or, failing that, from its shape."""
    kind = obj.get("kind")
    if isinstance(kind, str):
        return kind
    if "taskId" in obj and "final" in obj:
        return "status-update"
    if "taskId" in obj and "artifact" in obj:
        return "artifact-update"
    if "messageId" in obj:
        return "message"
    if "id" in obj:
        return "task"
    return None


_RESULT_TYPES: dict[str, type[StreamResult03]] = {
    "task": Task03,
    "message": Message03,
    "status-update": TaskStatusUpdateEvent03,
    "artifact-update": TaskArtifactUpdateEvent03,
}


def decode_result_03(obj: Any) -> StreamResult03:
    """Validate a decoded 0.3 JSON-RPC ``result`` (send or stream) into its Struct.

    Raises ``msgspec.ValidationError`` for anything that is not one of the four kinds.
    """
    if not isinstance(obj, dict):
        raise msgspec.ValidationError(f"a 0.3 result must be an object, not {type(obj).__name__}")
    kind = _result_kind(obj)
    target = _RESULT_TYPES.get(kind or "")
    if target is None:
        raise msgspec.ValidationError(f"unknown 0.3 result kind {kind!r}")
    body = infer_part_kinds(obj)
    body["kind"] = kind
    return convert(body, target)


# REST: key casing -----------------------------------------------------------------------


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def camelize(obj: Any, key: str = "") -> Any:
    """A copy of decoded protobuf JSON with snake_case keys in camelCase (user data untouched)."""
    if isinstance(obj, list):
        return [camelize(item, key) for item in obj]
    if not isinstance(obj, dict):
        return obj
    out: dict[str, Any] = {}
    for k, v in obj.items():
        name = _camel(k) if isinstance(k, str) else k
        keep = name == "metadata" or (name == "data" and key == "data")
        out[name] = v if keep else camelize(v, name)
    return out
