"""JSON in and out for the A2A HTTP wire objects, with every failure a msgspec error.

``decode``/``convert`` raise ``msgspec.DecodeError`` for bytes that are not JSON (invalid
UTF-8 included) and
``msgspec.ValidationError`` for JSON of the wrong shape; nesting deeper than the
interpreter's recursion limit (which msgspec reports as ``RecursionError``) becomes a
``DecodeError`` too, so callers handle exactly one family of exceptions.
"""

from __future__ import annotations

from typing import Any, TypeVar, overload

import msgspec

__all__ = ["convert", "decode", "encode", "to_builtins"]

T = TypeVar("T")

_encoder = msgspec.json.Encoder()


def encode(obj: object) -> bytes:
    """Compact JSON bytes of a wire object (or any builtins)."""
    return _encoder.encode(obj)


def to_builtins(obj: object) -> Any:
    """Dicts, lists and scalars of a wire object, keyed by wire names (for merging or logging)."""
    return msgspec.to_builtins(obj)


@overload
def decode(data: bytes | str) -> Any: ...
@overload
def decode(data: bytes | str, type: type[T]) -> T: ...
def decode(data: bytes | str, type: Any = Any) -> Any:
    """Decode JSON into ``type`` (default: builtins)."""
    try:
        return msgspec.json.decode(data, type=type)
    except RecursionError:
        raise msgspec.DecodeError("JSON nesting too deep") from None
    except UnicodeDecodeError:
        raise msgspec.DecodeError("JSON text is not valid UTF-8") from None


def convert(obj: object, type: type[T]) -> T:
    """Validate already-decoded builtins (dicts keyed by wire names) into ``type``."""
    try:
        return msgspec.convert(obj, type=type)
    except RecursionError:
        raise msgspec.DecodeError("JSON nesting too deep") from None
