"""Envelope encoding and decoding, with errors that name the first bad field."""

from __future__ import annotations

import re
from collections.abc import Callable

import msgspec

from .compact import decode_compact, decode_reply, full_path, is_compact
from .compact import encode_compact as encode_compact
from .compact import encode_reply as encode_reply
from .errors import InvalidEnvelope, UnsupportedVersion
from .wire import COMPACT_VERSIONS, PROTOCOL_VERSION, SUPPORTED_VERSIONS, Envelope, RequestEnvelope

__all__ = [
    "ENCODE_ERRORS",
    "bad_field",
    "decode_answer",
    "decode_envelope",
    "encode_compact",
    "encode_envelope",
    "encode_reply",
    "ensure_supported_version",
]

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(Envelope)

_PATH = re.compile(r" - at `\$(?P<path>[^`]*)`$")
_MISSING = re.compile(r"missing required field `(?P<field>[^`]+)`")


encode_envelope = _encoder.encode
"""Encode an envelope to JSON bytes (the encoder's own method: no Python frame per message).

Raises TypeError or msgspec.EncodeError for values JSON cannot hold, RecursionError for
structures nested too deep: see :data:`ENCODE_ERRORS`."""

ENCODE_ERRORS = (TypeError, ValueError, RecursionError, msgspec.EncodeError)
"""What encoding a handler's result (any Python value) may raise."""


def decode_envelope(data: bytes) -> Envelope:
    """Decode and validate one envelope, in the full form or the compact one (``bus.compact``).

    Raises:
        InvalidEnvelope: malformed JSON or a field of the wrong type or value;
            ``details['field']`` is the dotted path of the first bad field (in the full
            form's names, whichever form the envelope came in).
    """
    return _either(data, decode_compact)


def decode_answer(data: bytes, request: RequestEnvelope) -> Envelope:
    """Decode a reply to ``request``: a compact reply is completed with what the request says.

    Raises:
        InvalidEnvelope: as :func:`decode_envelope`.
    """
    return _either(data, lambda raw: decode_reply(raw, request))


def _either(data: bytes, compact: Callable[[bytes], Envelope]) -> Envelope:
    """``data`` in the full form, or in the compact one as ``compact`` decodes it. A full-form
    envelope is 1.3 whatever version it names (1.4 and 1.5 are the compact form), so that
    its answer goes in the form it came in."""
    if is_compact(data):
        return _read(compact, data, compact=True)
    try:
        envelope = _read(_decoder.decode, data)
    except InvalidEnvelope as exc:
        # The compact form from a writer that put its tag elsewhere than first.
        if exc.details.get("field") == "type" and b'"t"' in data:
            try:
                return _read(compact, data, compact=True)
            except InvalidEnvelope:
                pass
        raise
    if envelope.protocol_version in COMPACT_VERSIONS:
        envelope.protocol_version = PROTOCOL_VERSION
    return envelope


def _read(decode: Callable[[bytes], Envelope], data: bytes, *, compact: bool = False) -> Envelope:
    try:
        return decode(data)
    except msgspec.ValidationError as exc:
        field = bad_field(str(exc))
        if compact:
            field = full_path(field)
        raise InvalidEnvelope(f"invalid envelope: {exc}", details={"field": field}) from None
    except msgspec.DecodeError as exc:
        raise InvalidEnvelope(f"malformed envelope: {exc}", details={"field": "$"}) from None
    except (UnicodeDecodeError, RecursionError, ValueError, TypeError) as exc:
        # Invalid UTF-8 inside a string, nesting deeper than the decoder's stack: the
        # decoder raises these rather than its own errors. Whatever the bytes, the
        # receiver gets one typed error.
        reason = "invalid UTF-8" if isinstance(exc, UnicodeDecodeError) else str(exc)
        raise InvalidEnvelope(f"malformed envelope: {reason}", details={"field": "$"}) from None


def bad_field(message: str) -> str:
    """Dotted path of the field a msgspec validation message points at (``$`` for the root)."""
    path = ""
    m = _PATH.search(message)
    if m:
        path = m.group("path")
    missing = _MISSING.search(message)
    if missing:
        path = f"{path}.{missing.group('field')}"
    path = path.lstrip(".")
    return path or "$"


def ensure_supported_version(envelope: Envelope) -> None:
    """Raise UnsupportedVersion unless the envelope's protocolVersion is accepted."""
    if envelope.protocol_version not in SUPPORTED_VERSIONS:
        raise UnsupportedVersion(
            f"protocol version {envelope.protocol_version!r} is not supported; "
            f"supported: {', '.join(SUPPORTED_VERSIONS)}",
            details={"supported": list(SUPPORTED_VERSIONS), "field": "protocolVersion"},
        )
