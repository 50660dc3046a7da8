"""The console's live events as lines in a terminal (``a2a watch``), in seed 000's words.

A call prints when its record arrives, that is when it ends, with the tools its handler
used (those it was authorized to use, ``ctx.authorize_tool``: a framework agent's own
tools, a stdio agent's reported ones); the agents it called print as calls of their own::

    planner calling coder with task: write the parser
    coder returned: SUCCESS (120 tokens, 1.20 s)
    Tools used: linter, tests

A call still running after half a second prints its first line then, and the rest when it
ends.

Sessions print their new turns, changes of state and adoptions by another process.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass, field

from ..sessions.model import Session
from ..stores.audit import AuditRecord
from .feed import Event

__all__ = ["WatchFilter", "Watcher"]

_WHO = {"local_agent": "Local Agent", "remote_agent": "Remote Agent", "user": "You"}
_SENT = {
    "auto_sent": "auto-sent",
    "user_approved": "user-approved",
    "user_edited": "user-edited",
    "user_written": "user-written",
}
TEXT = 160  # characters of a task or a turn on one line


@dataclass(frozen=True)
class WatchFilter:
    conversation: str | None = None
    agent: str | None = None
    user: str | None = None

    def calls(self, r: AuditRecord) -> bool:
        return (
            (self.conversation is None or r.conversation_id == self.conversation)
            and (self.agent is None or self.agent in (r.origin, r.target))
            and (self.user is None or r.user_id == self.user)
        )

    def sessions(self, s: Session) -> bool:
        return (
            (self.conversation is None or s.id == self.conversation)
            and (self.agent is None or self.agent in (s.profile_id, s.remote))
            and (self.user is None or s.user_id == self.user)
        )


@dataclass
class Watcher:
    """Turns feed events into lines; remembers just enough to print only what is new."""

    only: WatchFilter = field(default_factory=WatchFilter)
    _seen: OrderedDict[str, tuple[str, int, int]] = field(default_factory=OrderedDict)
    _recent: deque[str] = field(default_factory=lambda: deque(maxlen=4096))
    _running: deque[str] = field(default_factory=lambda: deque(maxlen=4096))

    def lines(self, event: Event) -> list[str]:
        if event.kind == "call":
            return self._call(event.data)
        if event.kind == "session":
            return self._session(event.data)
        return []

    def _call(self, r: AuditRecord) -> list[str]:
        if r.request_id in self._recent:
            return []  # the caller's and the callee's record of one call, or a late running one
        calling = f"{r.origin} calling {r.target} with task: {_clip(r.objective or r.action)}"
        if r.outcome == "running":
            if r.request_id in self._running or not self.only.calls(r):
                return []
            self._running.append(r.request_id)
            return [calling]
        self._recent.append(r.request_id)
        if not self.only.calls(r):
            return []
        result = "SUCCESS" if r.outcome == "ok" else "FAILED"
        out = [
            *([] if r.request_id in self._running else [calling]),
            f"{r.target} returned: {result} ({r.tokens} tokens, {r.duration_ms / 1000:.2f} s)"
            + (f" {r.error_code}: {_clip(r.error_message or '')}" if r.error_code else ""),
        ]
        if r.tools:
            out.append("Tools used: " + ", ".join(dict.fromkeys(r.tools)))
        return out

    def _session(self, s: Session) -> list[str]:
        if not self.only.sessions(s):
            return []
        state, shown, adoptions = self._seen.get(s.id, ("", 0, 0))
        head = f"session {s.id} [{s.profile_id} -> {s.remote}, {s.mode}]"
        out = []
        for a in s.adoptions[adoptions:]:
            again = {"local": ": the local agent is asked again", "remote": ": the message is sent again"}
            out.append(f"{head} adopted by {a.by} ({a.previous} is gone){again.get(a.rerun or '', '')}")
        for turn in s.turns[shown:]:
            sent_by = turn.sent_by
            label = f" ({_SENT[sent_by]}{', sent again' if turn.resent else ''})" if sent_by else ""
            out.append(f"{head} turn {turn.index}: {_WHO[turn.role]}{label}: {_clip(turn.text)}")
        if s.state != state:
            why = (
                f": {s.ending.message}"
                if s.ending is not None and s.state in ("completed", "error", "stopped")
                else ""
            )
            out.append(f"{head} {s.state}{why}")
        self._seen[s.id] = (s.state, len(s.turns), len(s.adoptions))
        while len(self._seen) > 4096:
            self._seen.popitem(last=False)
        return out


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= TEXT else text[: TEXT - 1] + "…"
