"""The base Struct and the bounded scalar types every A2A HTTP wire object uses.

The public A2A protocol's JSON is the protobuf JSON mapping of ``a2a.v1``: camelCase keys,
fields at their default value left out, unknown fields ignored by readers. ``A2AStruct``
reproduces that with msgspec: ``rename="camel"``, ``omit_defaults=True`` and no
``forbid_unknown_fields``, so a peer on a newer minor version still decodes.

Decoding is bounded twice over: identifiers and names carry a maximum length here, and
the decoder refuses nesting deeper than the interpreter's recursion limit (``codec``
turns that into a ``msgspec.DecodeError``). The total body size is the HTTP layer's
business.
"""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import Meta

__all__ = ["A2AStruct", "Count", "Id", "Name"]

MAX_ID_LENGTH = 1024
MAX_NAME_LENGTH = 4096

Id = Annotated[str, Meta(max_length=MAX_ID_LENGTH)]
"""Task, context, message, artifact and configuration identifiers."""

Name = Annotated[str, Meta(max_length=MAX_NAME_LENGTH)]
"""Short human-readable strings and URLs: names, media types, versions, bindings."""

Count = Annotated[int, Meta(ge=0)]
"""Non-negative integers: history lengths, page sizes, totals."""


class A2AStruct(msgspec.Struct, rename="camel", omit_defaults=True, kw_only=True):
    """Base of every A2A HTTP wire object: camelCase keys, defaults omitted, keyword-only."""
