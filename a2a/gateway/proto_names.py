"""Request bodies that name fields by their Protocol Buffers names (``task_id`` for ``taskId``).

A2A 1.0's JSON is ProtoJSON, whose parsers accept a field's original proto name as well as
its lowerCamelCase JSON name; the official SDKs' servers do. The gateway's wire Structs
know only the JSON names, so :func:`json_names` renames a request's proto-named keys to
their JSON names before it is decoded. It follows the request type's declared message
fields only: free-form values (``metadata``, a data part's ``data``) keep their keys, and
a key that is neither name is left for the decoder to judge. Where a body names one field
both ways, the JSON name wins.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import msgspec

__all__ = ["json_names"]

_Fields = dict[str, tuple[str, tuple[msgspec.inspect.Type, ...]]]


def json_names(body: Any, request_type: type) -> Any:
    """``body`` (decoded JSON) with proto field names of ``request_type``'s messages renamed."""
    return _rename(body, _top(request_type))


@cache
def _top(request_type: type) -> tuple[msgspec.inspect.Type, ...]:
    return _messages_in(msgspec.inspect.type_info(request_type))


def _rename(value: Any, messages: tuple[msgspec.inspect.Type, ...]) -> Any:
    if isinstance(value, dict):
        for message in messages:
            if isinstance(message, msgspec.inspect.StructType):
                return _rename_object(value, _fields(message.cls))
        return value
    if isinstance(value, list):
        lists = (m for m in messages if isinstance(m, msgspec.inspect.ListType))
        items = tuple(t for m in lists for t in _messages_in(m.item_type))
        if not items:
            return value
        renamed = [_rename(item, items) for item in value]
        return renamed if any(a is not b for a, b in zip(renamed, value, strict=True)) else value
    return value


def _rename_object(value: dict[str, Any], fields: _Fields) -> dict[str, Any]:
    """``value`` itself when nothing in it is renamed (the usual camelCase body), else a copy."""
    renamed: dict[str, Any] = {}
    changed = False
    for key, item in value.items():
        name, inner = fields.get(key, (key, ()))
        if name != key:
            changed = True
            if name in value:
                continue  # the JSON name is given too: it wins
        new = _rename(item, inner) if inner else item
        changed = changed or new is not item
        renamed[name] = new
    return renamed if changed else value


@cache
def _fields(cls: type[Any]) -> _Fields:
    """Per accepted key (proto and JSON name) of a message: its JSON name and nested messages."""
    info = msgspec.inspect.type_info(cls)
    assert isinstance(info, msgspec.inspect.StructType)
    fields: _Fields = {}
    for f in info.fields:
        entry = (f.encode_name, _messages_in(f.type))
        fields[f.encode_name] = entry
        fields[f.name] = entry
    return fields


def _messages_in(t: msgspec.inspect.Type) -> tuple[msgspec.inspect.Type, ...]:
    """The message types (Structs, lists of them) a field of type ``t`` may hold."""
    if isinstance(t, msgspec.inspect.UnionType):
        return tuple(m for member in t.types for m in _messages_in(member))
    if isinstance(t, msgspec.inspect.Metadata):
        return _messages_in(t.type)
    if isinstance(t, msgspec.inspect.StructType):
        return (t,)
    if isinstance(t, msgspec.inspect.ListType) and _messages_in(t.item_type):
        return (t,)
    return ()
