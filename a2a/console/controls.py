"""A person's controls of a session, as the console applies them: what each one did, in words.

Taking over tells what became of the local agent's draft: set aside and not sent (handed
back to the page to start from), or, when it is still being written, that it will wait
for the person.
"""

from __future__ import annotations

from dataclasses import dataclass

from bus.errors import InvalidParams

from ..sessions import Sessions
from ..sessions.model import Session

__all__ = ["CONTROLS", "Done", "apply_control"]

CONTROLS = ("pause", "resume", "stop", "approve", "write", "takeover", "handback")


@dataclass(frozen=True, slots=True)
class Done:
    session: Session
    notice: str | None = None
    """What happened, for the person (take over)."""
    set_aside: str | None = None
    """The local agent's draft that take over set aside: not sent, shown to start from."""


async def apply_control(
    sessions: Sessions, session_id: str, user: str, action: str, text: str | None
) -> Done:
    """Raises:
    InvalidParams: an unknown control, or one the session's state refuses.
    NotFound: not the user's session.
    Unavailable: Redis could not be reached.
    """
    if action == "pause":
        return Done(await sessions.pause(session_id, user))
    if action == "resume":
        return Done(await sessions.resume(session_id, user))
    if action == "stop":
        return Done(await sessions.stop(session_id, user))
    if action == "approve":
        return Done(await sessions.approve(session_id, user, text))
    if action == "write":
        return Done(await sessions.write(session_id, user, text or ""))
    if action == "handback":
        return Done(await sessions.take_over(session_id, user, on=False))
    if action == "takeover":
        before = await sessions.get(session_id, user)
        after = await sessions.take_over(session_id, user, on=True)
        return _taken_over(before, after)
    raise InvalidParams(f"unknown control {action!r}; one of {', '.join(CONTROLS)}")


def _taken_over(before: Session, after: Session) -> Done:
    if before.takeover:
        return Done(after, "You had taken over already: write the next message.")
    if before.state == "ready_to_send" and before.draft is not None:
        return Done(
            after,
            "You took over. The local agent's draft was set aside and not sent; it is in the box"
            " to start from. Write the next message and send it as yours.",
            before.draft,
        )
    if before.state == "waiting_local" or before.in_flight == "local":
        return Done(
            after,
            "You took over while the local agent writes its draft: it will wait here, never sent by"
            " itself, for you to approve, edit or replace.",
        )
    return Done(after, "You took over: you write the next message when it is the session's turn to send.")
