"""The frames of the local prompt channel: one JSON object per line, tagged by ``type``.

The bridge writes a :class:`LocalPromptRequest` (``desktop.local_prompt.request``) to the
agent process's stdin; the process answers on stdout with exactly one terminal
:class:`LocalPromptResponse` (``desktop.local_prompt.response``) carrying the same
``request_id``, and may send :class:`LocalPromptProgress` (``desktop.local_prompt.progress``)
lines before it. Field names are the seed's own (snake_case). Decoding is strict about
what the bridge relies on (the tag, ``request_id``, ``status``, field types) and lets
unknown fields pass, so agents written against a later version of the frames still work.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Sequence
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

__all__ = [
    "PROGRESS",
    "PROMPT_SCHEMA",
    "REQUEST",
    "RESPONSE",
    "Constraints",
    "Frame",
    "FrameError",
    "HistoryTurn",
    "LocalPromptProgress",
    "LocalPromptRequest",
    "LocalPromptResponse",
    "Mode",
    "OutputFrame",
    "bound_history",
    "decode_output",
    "encode_request",
    "new_request_id",
    "peek_oversized",
    "peek_response_id",
]

REQUEST = "desktop.local_prompt.request"
RESPONSE = "desktop.local_prompt.response"
PROGRESS = "desktop.local_prompt.progress"

Mode = Literal["manual", "semi_auto", "full_auto"]
Count = Annotated[int, Meta(ge=0)]
Positive = Annotated[int, Meta(ge=1)]


class Frame(msgspec.Struct, kw_only=True, tag_field="type"):
    """Base of every frame: keyword-only fields, ``type`` names the variant."""


class HistoryTurn(msgspec.Struct, kw_only=True):
    """One earlier turn: who spoke (``local_agent``, ``remote_agent``, ...) and what."""

    role: str
    text: str


class Constraints(msgspec.Struct, kw_only=True):
    """Limits the agent is asked to respect for one turn (the seed's example values as defaults).

    ``local_turn_timeout_ms`` is None in a caller's parameters when it sets no limit of its
    own; in the frame the bridge sends, it is the time the agent actually has.
    """

    max_output_chars: Positive = 12000
    allow_tool_use: bool = False
    max_history_turns: Count = 6
    max_history_chars: Count = 24000
    max_tool_rounds: Count = 3
    local_turn_timeout_ms: Positive | None = None


class LocalPromptRequest(Frame, tag=REQUEST):
    """Asks the agent for its next outbound message."""

    request_id: str
    profile_id: str = ""
    session_id: str = ""
    turn_index: Count = 0
    mode: Mode = "manual"
    objective: str = ""
    remote_message: str = ""
    history: list[HistoryTurn] = msgspec.field(default_factory=list)
    history_summary: str | msgspec.UnsetType = msgspec.UNSET
    """Older turns summarised by the caller; left out of the frame when not given."""
    constraints: Constraints = msgspec.field(default_factory=Constraints)


class LocalPromptResponse(Frame, tag=RESPONSE):
    """The one terminal answer to a request."""

    request_id: str
    status: Literal["ok", "error"]
    draft_message: str = ""
    reason: str = ""
    metrics: dict[str, Any] = msgspec.field(default_factory=dict)
    tools_used: list[str] = msgspec.field(default_factory=list)
    """The tools the program used for this answer (an extension of the seed's frame): the
    bridge checks each against the agent's rights and reports them as the call's tools."""


class LocalPromptProgress(Frame, tag=PROGRESS):
    """A non-terminal update on a request in progress (an extension of the seed's frames)."""

    request_id: str
    text: str = ""


OutputFrame = LocalPromptResponse | LocalPromptProgress


class FrameError(ValueError):
    """A stdout line that is not an output frame; ``kind`` is a short fixed word for counting."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class _Peek(msgspec.Struct):
    type: str = ""
    request_id: str = ""


_encoder = msgspec.json.Encoder()
_decoder: msgspec.json.Decoder[OutputFrame] = msgspec.json.Decoder(OutputFrame)
_peeker = msgspec.json.Decoder(_Peek)


def new_request_id() -> str:
    """``req_`` and 24 random hex digits."""
    return "req_" + secrets.token_hex(12)


def encode_request(frame: LocalPromptRequest) -> bytes:
    """The frame as one NDJSON line (newline included; JSON never holds a raw newline)."""
    return _encoder.encode(frame) + b"\n"


def decode_output(line: bytes) -> OutputFrame:
    """One stdout line as a frame.

    Raises:
        FrameError: ``not json``, ``not utf-8`` (a string holds bytes that are not UTF-8)
            or ``not a frame`` (JSON, but no valid response or progress frame), with the
            decoder's reason; whatever else the decoder raises is ``undecodable``.
    """
    try:
        return _decoder.decode(line)
    except msgspec.ValidationError as exc:
        raise FrameError("not a frame", str(exc)) from None
    except msgspec.DecodeError as exc:
        if "truncated" in str(exc) and _HALF_PAIR.search(line) is not None:  # msgspec says "truncated"
            raise FrameError("not json", "a string holds half of a surrogate pair (\\udXXX)") from None
        raise FrameError("not json", str(exc)) from None
    except UnicodeDecodeError as exc:
        raise FrameError("not utf-8", f"a string is not UTF-8 ({exc.reason})") from None
    except Exception as exc:
        raise FrameError("undecodable", f"{type(exc).__name__}: {exc}"[:200]) from None


def peek_response_id(line: bytes) -> str | None:
    """The ``request_id`` of a line that claims to be a response frame, however malformed otherwise."""
    try:
        peek = _peeker.decode(line)
    except Exception:  # not JSON (half a surrogate pair in a string, say): its bytes may still claim it
        kind = _TYPE.search(line)
        named = _REQUEST_ID.search(line)
        if kind is None or kind[1] != RESPONSE.encode() or named is None or not named[1].isascii():
            return None  # the runtime's request ids are ASCII
        return named[1].decode()
    return peek.request_id if peek.type == RESPONSE and peek.request_id else None


_TYPE = re.compile(rb'"type"\s*:\s*"([a-z_.]{1,64})"')
_REQUEST_ID = re.compile(rb'"request_id"\s*:\s*"([^"\\]{1,256})"')
_HALF_PAIR = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def peek_oversized(head: bytes, tail: bytes) -> str | None:
    """The ``request_id`` named in the kept start or the end of a line too long to decode, unless
    it says it is a progress frame (then None, as for a line that names none)."""
    found = None
    for part in (head, tail):
        if (kind := _TYPE.search(part)) is not None and kind[1] == PROGRESS.encode():
            return None
        if found is None and (rid := _REQUEST_ID.search(part)) is not None:
            found = rid[1].decode(errors="replace")
    return found


def bound_history(history: Sequence[HistoryTurn], turns: int, chars: int) -> list[HistoryTurn]:
    """The most recent turns that fit both ``turns`` and ``chars`` (the texts' total length).

    Older turns are dropped whole; summarising them is the caller's job (``history_summary``).
    """
    kept: list[HistoryTurn] = []
    used = 0
    for turn in reversed(history):
        if len(kept) == turns or used + len(turn.text) > chars:
            break
        kept.append(turn)
        used += len(turn.text)
    kept.reverse()
    return kept


_STRING = {"type": "string", "maxLength": 1 << 20}
PROMPT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["objective"],
    "additionalProperties": False,
    "properties": {
        "objective": _STRING,
        "remote_message": _STRING,
        "profile_id": {"type": "string", "maxLength": 256},
        "session_id": {"type": "string", "maxLength": 256},
        "turn_index": {"type": "integer", "minimum": 0},
        "mode": {"enum": ["manual", "semi_auto", "full_auto"]},
        "history": {
            "type": "array",
            "maxItems": 1000,
            "items": {
                "type": "object",
                "required": ["role", "text"],
                "additionalProperties": False,
                "properties": {"role": {"type": "string", "maxLength": 64}, "text": _STRING},
            },
        },
        "history_summary": _STRING,
        "constraints": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "max_output_chars": {"type": "integer", "minimum": 1},
                "allow_tool_use": {"type": "boolean"},
                "max_history_turns": {"type": "integer", "minimum": 0},
                "max_history_chars": {"type": "integer", "minimum": 0},
                "max_tool_rounds": {"type": "integer", "minimum": 0},
                "local_turn_timeout_ms": {"type": "integer", "minimum": 1},
            },
        },
    },
}
"""Parameters of the ``prompt`` action: the request frame's fields but ``type`` and ``request_id``."""
