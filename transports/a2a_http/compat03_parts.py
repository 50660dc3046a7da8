"""Parts between A2A 0.3 and 1.0, both ways, in either 0.3 dialect (see ``dialects03``).

A 0.3 file's ``bytes``/``uri``/``mimeType``/``name`` are 1.0's ``raw``/``url``/``mediaType``/
``filename``. 0.3 wants a data part's ``data`` to be an object: a 1.0 value that is not one
(a list, a string...) travels as ``{"value": X}`` with ``metadata.data_part_compat = true``,
and comes back unwrapped, as the official SDK does.
"""

from __future__ import annotations

import base64
import binascii

import msgspec

from .dialects03 import JSONRPC_03, Dialect03, LegacyPart, build
from .types import Part
from .types03 import DataPart03, FilePart03, TextPart03
from .types03_rest import DataPb03, FilePb03, PartPb03

__all__ = ["DATA_PART_COMPAT", "part_from_03", "part_to_03"]

DATA_PART_COMPAT = "data_part_compat"


def part_to_03(part: Part, dialect: Dialect03 = JSONRPC_03) -> LegacyPart:
    """A 1.0 part in 0.3: text, file (by ``uri`` or inline ``content``) or data object."""
    structs = dialect.structs
    if part.text is not None:
        return build(structs.text_part, text=part.text, metadata=part.metadata)
    if part.raw is not None or part.url is not None:
        content = _content_to_03(part.raw, dialect)
        file = build(
            structs.file, content=content, uri=part.url, mime_type=part.media_type, name=part.filename
        )
        return build(structs.file_part, file=file, metadata=part.metadata)
    if isinstance(part.data, dict):
        data, metadata = part.data, part.metadata
    else:
        data, metadata = {"value": part.data}, {**(part.metadata or {}), DATA_PART_COMPAT: True}
    boxed = data if structs.data_box is None else build(structs.data_box, data=data)
    return build(structs.data_part, data=boxed, metadata=metadata)


def part_from_03(part: LegacyPart, dialect: Dialect03 = JSONRPC_03) -> Part:
    """A 0.3 part as 1.0; a REST part with text, file and data all absent is refused."""
    match part:
        case TextPart03(text=text) | PartPb03(text=str() as text):
            return Part(text=text, metadata=part.metadata)
        case FilePart03(file=file) | PartPb03(file=FilePb03() as file):
            raw = None if file.uri is not None else _content_from_03(file.content or b"", dialect)
            return Part(
                raw=raw, url=file.uri, media_type=file.mime_type, filename=file.name, metadata=part.metadata
            )
        case DataPart03(data=data) | PartPb03(data=DataPb03(data=data)):
            metadata = dict(part.metadata or {})
            wrapped = bool(metadata.pop(DATA_PART_COMPAT, False))
            return Part(data=data.get("value") if wrapped else data, metadata=metadata or None)
    raise msgspec.ValidationError("a 0.3 part needs one of text, file, data")


def _content_to_03(raw: bytes | None, dialect: Dialect03) -> bytes | None:
    """A file's inline bytes as the dialect holds them (base64 text in REST)."""
    return base64.b64encode(raw) if raw is not None and dialect.bytes_as_base64_text else raw


def _content_from_03(content: bytes, dialect: Dialect03) -> bytes:
    """A file's inline bytes; where the dialect holds them as base64 text, that text decoded."""
    if not dialect.bytes_as_base64_text:
        return content
    try:
        return base64.b64decode(content, validate=True)
    except binascii.Error as exc:
        raise msgspec.ValidationError(f"fileWithBytes does not hold base64 text: {exc}") from None
