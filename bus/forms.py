"""Which form a request travels in: the full one (1.3) or the compact one (``bus.compact``).

``Link.peer_protocol`` (``Settings.peer_protocol``) chooses:

- ``auto`` (a runtime's default): compact to a target whose every receiver is known to read
  1.5, else full. An instance reads it when its registry record says so (``protocolVersion``
  1.5 or later); an agent, when every instance of it the caller's registry view holds (at
  least one) does, the view following that agent (:attr:`Forms.readers`,
  ``LocalView.reads_compact``): an agent the view does not follow yet gets the full form,
  and once it has answered one, the view follows it (:meth:`Forms.answered`).
  Without a view, always full. The compact form then leaves out a conversation id that is
  the call tree's (1.5); an instance of 1.4 gets the full form.
- ``1.5``: always compact, as ``auto`` writes it; ``1.4``: always compact, every field
  written (for peers that read 1.4 only); ``1.3``: always full.

Replies come in the form of their request, whatever this side chose (``bus.answers``).

In ``auto`` a receiver may still read less than the view believes: an instance of an older
runtime that joined its agent before the view heard of it, or a record that says more than
its runtime reads. A runtime before 1.4 answers a compact request with INVALID_ENVELOPE naming
no request (``inReplyTo`` null) on field ``type`` (it knows no ``t`` tag), one of 1.4 on
field ``conversationId`` (left out): it handled nothing. The caller then withdraws that
request (were the refusal forged by someone else,
the callee stops it), sends it once more in the full form (:meth:`Forms.again`) and sends
that agent the full form for :data:`FULL_FORM_FOR` seconds. The request goes again under a
new request id, and so on a new reply subject: the callee keeps its refusal as the answer to
the first one's, and would answer a repeat with it. It goes again only if the first went out
once (one sent again after a reconnect may have reached two instances, and the other one may
be handling it) and the refusal came on its own reply subject: a reply batch never carries
such a refusal (a caller takes a batch line's error only when it names its request). Any
other refusal ends the call: the full form would be refused alike.
"""

from __future__ import annotations

import time
from typing import Literal, Protocol

import msgspec

from . import codec
from .compact import is_compact
from .errors import InvalidEnvelope
from .ids import new_id
from .link import Link
from .wire import COMPACT_VERSIONS, ErrorEnvelope, RequestEnvelope

__all__ = ["AUTO", "FULL_FORM_FOR", "MAX_REMEMBERED", "Forms", "PeerProtocol", "Readers"]

PeerProtocol = Literal["auto", "1.3", "1.4", "1.5"]
AUTO = "auto"
FULL_FORM_FOR = 300.0
"""Seconds an agent that refused a compact request is sent the full form."""
MAX_REMEMBERED = 4096
"""Agents remembered as having refused (the oldest forgotten first)."""


class Readers(Protocol):
    """What says which receivers read the compact form (a registry view)."""

    def reads_compact(self, agent: str, instance: str | None = None) -> bool:
        """Whether ``instance`` (None: every instance of ``agent``) is known to read 1.5."""
        ...

    def learn(self, agent: str) -> None:
        """Find out soon whether every instance of ``agent`` reads 1.5 (follow it)."""
        ...


class Forms:
    """The form of each request a caller sends (module docstring)."""

    def __init__(self, link: Link) -> None:
        self.link = link
        self.readers: Readers | None = None
        """In ``auto``: what knows which targets read 1.5 (None: none is known to)."""
        self._refused: dict[str, float] = {}
        """Agent -> until when (monotonic clock) it is sent the full form."""
        self.resent = 0
        """Requests sent again in the full form after an older runtime refused the compact one."""

    def compact(self, subject: str) -> bool:
        """Whether the request to ``subject`` goes in the compact form."""
        subjects = self.link.subjects
        return self.choose(subjects.agent_of(subject), subjects.instance_of(subject))

    def choose(self, agent: str, instance: str | None) -> bool:
        """:meth:`compact` for a request to ``instance`` of ``agent`` (None: to any of its
        instances), for a caller that knows them without reading its subject."""
        protocol = self.link.peer_protocol
        if protocol != AUTO:
            return protocol in COMPACT_VERSIONS
        readers = self.readers
        if readers is None:
            return False
        refused = self._refused
        if refused and agent in refused:
            if refused[agent] > time.monotonic():
                return False
            del refused[agent]
        return readers.reads_compact(agent, instance)

    def answered(self, subject: str) -> None:
        """A full-form request to ``subject`` was answered. In ``auto``, its agent (which
        exists: it answered) is learnt about, so that later calls may go compact; an agent
        that never answers (one that does not exist) is never followed for this."""
        readers = self.readers
        if readers is not None and self.link.peer_protocol == AUTO:
            subjects = self.link.subjects
            if subjects.instance_of(subject) is None and (agent := subjects.agent_of(subject)):
                readers.learn(agent)

    def refused(self, data: bytes, subject: str, request: RequestEnvelope) -> bool:
        """Whether ``data``, the answer to the compact ``request`` sent to ``subject`` in
        ``auto``, is an older runtime's refusal of what it could not read (INVALID_ENVELOPE
        naming no request, on field ``type``: it read no tag it knows; or, when the request
        left its conversation id out, on that field: a 1.4 reader); the agent is then sent
        the full form for :data:`FULL_FORM_FOR` seconds."""
        if self.link.peer_protocol != AUTO or is_compact(data):
            return False
        try:
            reply = codec.decode_envelope(data)
        except InvalidEnvelope:
            return False
        error = reply.payload.error
        if (
            type(reply) is not ErrorEnvelope
            or reply.in_reply_to is not None
            or error is None
            or error.code != InvalidEnvelope.code
        ):
            return False
        field = (error.details or {}).get("field")
        left_out = request.conversation_id == request.metadata.correlation_id  # as auto writes it
        if field != "type" and (field != "conversationId" or not left_out):
            return False  # a bad field, which the full form would have too: its refusal ends the call
        refused = self._refused
        refused.pop(agent := self.link.subjects.agent_of(subject), None)
        refused[agent] = time.monotonic() + FULL_FORM_FOR
        if len(refused) > MAX_REMEMBERED:
            del refused[next(iter(refused))]
        return True

    def again(self, request: RequestEnvelope, left: float) -> RequestEnvelope:
        """``request`` to send again after a refusal: a new request id (and message id), and
        ``left`` seconds to live."""
        self.resent += 1
        meta = msgspec.structs.replace(request.metadata, request_id=new_id(), ttl_ms=max(0, int(left * 1000)))
        return msgspec.structs.replace(request, message_id=new_id(), metadata=meta)
