"""The transport's NATS header parser gives what nats-py's own gives, for any bytes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from nats.aio.client import Client

from transports._nats_client import Client as _Client
from transports._nats_client import FastClient as _FastClient

PIECES = st.sampled_from(
    [b"Nats-Stream", b"A B", b":", b": ", b"\t", b"\r\n", b"\x1c", b"\xff", b"v", b" x "]
)


@pytest.mark.skipif(
    _Client is not _FastClient,
    reason="this nats-py parses headers another way, and the transport uses its parser as it is",
)
@given(st.lists(PIECES, max_size=30).map(b"".join) | st.binary(max_size=80))
def test_it_parses_any_block_as_nats_py_does(raw: bytes) -> None:
    assert _FastClient._parse_header_lines(raw) == Client._parse_header_lines(raw)
