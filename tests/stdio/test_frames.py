"""The frames, the bounded line reader, the turn timeout and the command check, without processes."""

from __future__ import annotations

import json

import msgspec
import pytest

from a2a.prompt.frames import (
    FrameError,
    LocalPromptProgress,
    LocalPromptResponse,
    bound_history,
    decode_output,
    encode_request,
    new_request_id,
    peek_oversized,
    peek_response_id,
)
from a2a.stdio import PROMPT_SCHEMA, Constraints, HistoryTurn, LocalPromptRequest, StdioConfig, turn_timeout
from a2a.stdio.lines import LineReader
from a2a.stdio.process import ProcessSpec, exit_reason, spawn

pytestmark = pytest.mark.anyio


def test_a_request_frame_has_the_seeds_fields_and_defaults() -> None:
    rid = new_request_id()
    assert rid.startswith("req_") and len(rid) == 28 and rid != new_request_id()
    line = encode_request(LocalPromptRequest(request_id=rid, objective="review this API"))
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert json.loads(line) == {
        "type": "desktop.local_prompt.request",
        "request_id": rid,
        "profile_id": "",
        "session_id": "",
        "turn_index": 0,
        "mode": "manual",
        "objective": "review this API",
        "remote_message": "",
        "history": [],
        "constraints": {
            "max_output_chars": 12000,
            "allow_tool_use": False,
            "max_history_turns": 6,
            "max_history_chars": 24000,
            "max_tool_rounds": 3,
            "local_turn_timeout_ms": None,
        },
    }
    summary = LocalPromptRequest(request_id=rid, history_summary="earlier: x")
    assert json.loads(encode_request(summary))["history_summary"] == "earlier: x"


def test_the_prompt_schema_names_exactly_the_request_fields_but_type_and_request_id() -> None:
    fields = {f.name for f in msgspec.structs.fields(LocalPromptRequest)} - {"request_id"}
    assert set(PROMPT_SCHEMA["properties"]) == fields
    constraints = {f.name for f in msgspec.structs.fields(Constraints)}
    assert set(PROMPT_SCHEMA["properties"]["constraints"]["properties"]) == constraints


def test_output_lines_decode_strictly_and_say_what_is_wrong() -> None:
    ok = decode_output(b'{"type":"desktop.local_prompt.response","request_id":"r","status":"ok","extra":1}')
    assert ok == LocalPromptResponse(request_id="r", status="ok")
    progress = decode_output(b'{"type":"desktop.local_prompt.progress","request_id":"r","text":"t"}')
    assert progress == LocalPromptProgress(request_id="r", text="t")
    for line, kind in [
        (b"hello", "not json"),
        (b'{"type": ', "not json"),
        (b"[1]", "not a frame"),
        (b'{"type":"desktop.local_prompt.request","request_id":"r"}', "not a frame"),
        (b'{"type":"desktop.local_prompt.response","request_id":"r","status":"maybe"}', "not a frame"),
        (b'{"type":"desktop.local_prompt.response","status":"ok"}', "not a frame"),
        (
            b'{"type":"desktop.local_prompt.response","request_id":"r","status":"ok","metrics":[]}',
            "not a frame",
        ),
    ]:
        with pytest.raises(FrameError) as caught:
            decode_output(line)
        assert caught.value.kind == kind, line
    bad = b'{"type":"desktop.local_prompt.response","request_id":"r","status":"maybe"}'
    assert peek_response_id(bad) == "r"
    assert peek_response_id(b'{"type":"desktop.local_prompt.progress","request_id":"r"}') is None
    assert peek_response_id(b"nope") is None


def test_history_keeps_the_newest_turns_within_both_bounds() -> None:
    turns = [HistoryTurn(role="local_agent" if i % 2 else "remote_agent", text=str(i) * 10) for i in range(8)]
    assert [t.text[0] for t in bound_history(turns, 3, 1000)] == ["5", "6", "7"]
    assert [t.text[0] for t in bound_history(turns, 6, 25)] == ["6", "7"]
    assert bound_history(turns, 0, 1000) == [] and bound_history(turns, 5, 5) == []


def test_the_turn_timeout_follows_tool_use_the_callers_limit_and_the_ceiling() -> None:
    config = StdioConfig()
    assert turn_timeout(Constraints(), config) == 60
    assert turn_timeout(Constraints(allow_tool_use=True), config) == 120
    assert turn_timeout(Constraints(local_turn_timeout_ms=5000), config) == 5
    assert turn_timeout(Constraints(local_turn_timeout_ms=90_000), config) == 60  # lowers, never raises
    assert turn_timeout(Constraints(allow_tool_use=True, local_turn_timeout_ms=600_000), config) == 120
    with pytest.raises(ValueError, match="grace"):
        StdioConfig(grace=0)


class Chunks:
    """A stream that hands out the given chunks, then end of stream."""

    def __init__(self, *chunks: bytes) -> None:
        self.chunks = list(chunks)

    async def read(self, n: int = -1) -> bytes:
        return self.chunks.pop(0) if self.chunks else b""


async def test_the_line_reader_cuts_long_lines_and_finds_the_next_one() -> None:
    stream = Chunks(b"short\nlo", b"ng" * 10, b"ng\nnext", b"\n\nlast")
    reader = LineReader(stream, 8)
    lines = []
    while (line := await reader.readline()) is not None:
        lines.append(line)
    assert [(line.data, line.complete) for line in lines] == [
        (b"short", True),
        (b"longngng", False),
        (b"next", True),
        (b"", True),
        (b"last", True),
    ]


async def test_the_line_reader_holds_at_most_its_limit_of_an_endless_line() -> None:
    limit = 1000
    stream = Chunks(*[b"x" * 65536] * 64, b"\nok\n")  # 4 MiB without a newline
    reader = LineReader(stream, limit)
    first = await reader.readline()
    assert first is not None and len(first.data) == limit and not first.complete
    assert first.tail == b"x" * 4096  # the end of the line, to see what it was about
    assert await reader.readline() == (b"ok", True, b"")
    assert await reader.readline() is None


def test_a_command_is_checked_before_anything_runs() -> None:
    with pytest.raises(ValueError, match="needs a command"):
        ProcessSpec.build([])
    with pytest.raises(ValueError, match="not found"):
        ProcessSpec.build(["surely-no-such-program-here"])
    with pytest.raises(ValueError, match="not a directory"):
        ProcessSpec.build(["python3"], cwd="/surely/not/here")
    with pytest.raises(ValueError, match="sequence of arguments"):
        ProcessSpec.build("python3 agent.py")
    spec = ProcessSpec.build(["sh", "-c", "true"], env={"EXTRA": "1"})
    assert spec.env is not None and spec.env["EXTRA"] == "1" and "PATH" in spec.env
    assert exit_reason(3) == "exited with code 3" and exit_reason(-9) == "was killed by SIGKILL"


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        (b"\xff\xfe\x80", "not json"),
        (b'{"type": "desktop.local_prompt.progress", "request_id": "r", "text": "\xff"}', "not utf-8"),
        (b'{"type": "desktop.local_prompt.response", "request_id": "\xe9", "status": "ok"}', "not utf-8"),
        (b'{"type": "desktop.local_prompt.response", "request_id": "r", "status": "ok"', "not json"),
    ],
)
def test_every_undecodable_line_is_a_frame_error(line: bytes, kind: str) -> None:
    with pytest.raises(FrameError) as caught:
        decode_output(line)
    assert caught.value.kind == kind
    assert peek_response_id(line) in (None, "r")  # never raises


def test_a_response_with_half_a_surrogate_pair_is_not_json_but_still_names_its_request() -> None:
    """JavaScript's JSON.stringify writes half an emoji of a string cut in two as an escape no
    UTF-8 text can carry: the line is no JSON, yet it answers its request (AGENT_ERROR at once)."""
    line = b'{"type": "desktop.local_prompt.response", "request_id": "req_1", "draft_message": "cut \\ud83d"}'
    with pytest.raises(FrameError, match="half of a surrogate pair") as caught:
        decode_output(line)
    assert caught.value.kind == "not json"
    assert peek_response_id(line) == "req_1"
    assert peek_response_id(line.replace(b"response", b"progress")) is None
    whole = line.replace(b'"draft', b'"status": "ok", "draft').replace(b"cut \\ud83d", b"\\ud83d\\ude00")
    assert decode_output(whole).draft_message == "\U0001f600"  # a whole pair is an emoji


def test_an_oversized_line_names_its_request_at_either_end() -> None:
    head = b'{"type": "desktop.local_prompt.response", "request_id": "req_1", "draft_message": "xxx'
    assert peek_oversized(head, b'xxx"}') == "req_1"
    sorted_keys = b'{"draft_message": "xxxx'  # json.dumps(sort_keys=True): the id comes last
    assert peek_oversized(sorted_keys, b'xx", "request_id": "req_2", "status": "ok"}') == "req_2"
    progress = b'{"type": "desktop.local_prompt.progress", "request_id": "req_3", "text": "xx'
    assert peek_oversized(progress, b'xx"}') is None  # an oversized progress update fails nothing
    assert peek_oversized(b"x" * 100, b"x" * 100) is None
    escaped = b'{"draft_message": "say \\"request_id\\": \\"req_4\\" xxx'
    assert peek_oversized(escaped, b"xx") is None  # quoted inside a string: not a field


async def test_a_program_that_cannot_be_executed_fails_to_start_with_its_reason() -> None:
    with pytest.raises(FileNotFoundError):
        await spawn(ProcessSpec(("/surely/no/such/program",)))
