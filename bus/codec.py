"""Envelope encoding and decoding, with errors that name the first bad field."""

from __future__ import annotations

import re

import msgspec

from .errors import InvalidEnvelope, UnsupportedVersion
from .wire import SUPPORTED_VERSIONS, Envelope

__all__ = ["ENCODE_ERRORS", "bad_field", "decode_envelope", "encode_envelope", "ensure_supported_version"]

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
    """Decode and validate one envelope.

    Raises:
        InvalidEnvelope: malformed JSON or a field of the wrong type or value;
            ``details['field']`` is the dotted path of the first bad field.
    """
    try:
        return _decoder.decode(data)  # type: ignore[no-any-return]
    except msgspec.ValidationError as exc:
        field = bad_field(str(exc))
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
