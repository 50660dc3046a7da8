"""Operator-driven sessions: start one, watch it, and steer it from any process.

::

    async with Runtime(settings) as rt, Sessions(rt) as sessions:
        await sessions.set_policy("alice", "drafter", SharedCallPolicy(
            allow_shared_agent_calls=True, allowed_shared_device_ids=["reviewer"]))
        s = await sessions.start(user_id="alice", profile_id="drafter", remote="reviewer",
                                 objective="review this API for security issues")
        await sessions.approve(s.id, "alice")          # manual mode: each draft waits

The process that starts a session owns it and runs its loop (:class:`SessionRunner`)
while it holds the session's lease; the controls (pause, resume, stop, approve, write,
take over) work from any process, since they change the session in Redis. When the owner
dies or leaves, a process serving the session's user adopts it and runs the loop on
(``adoption``); a loop whose lease is gone stops at once and writes nothing more.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import socket
import time
from collections.abc import Callable
from types import TracebackType

import anyio
import msgspec
from anyio.abc import TaskGroup

from bus.errors import InvalidParams, Unavailable
from bus.subjects import validate_name
from bus.wire import Orchestration

from ..core.runtime import Runtime
from ..prompt.frames import Constraints
from .adoption import Adopter
from .machine import move
from .model import TERMINAL, Ending, Limits, Mode, SentBy, Session
from .policy import PolicyStore, SharedCallPolicy, check
from .runner import SessionRunner
from .store import AuditEntry, LeaseLost, SessionStore, Unreadable
from .wakeups import wake_runners

__all__ = ["Sessions"]

log = logging.getLogger("a2a.sessions")
MODES = ("manual", "semi_auto", "full_auto")
LEASE = 10.0
"""Seconds a session's lease outlives its owner's last renewal (``A2A_SESSION_LEASE``)."""


class Sessions:
    def __init__(self, runtime: Runtime, *, lease: float | None = None, adopt_limit: int = 8) -> None:
        """Sessions over the runtime's Redis.

        ``lease``: seconds a loop's lease outlives its last renewal (renewed every third of
        it), so a dead owner's sessions are adopted within about 1.5 times it (default
        ``A2A_SESSION_LEASE``, else 10). ``adopt_limit``: adopted loops this process runs at once.

        Raises:
            Unavailable: the runtime has no Redis.
            ValueError: ``A2A_SESSION_LEASE`` is not a positive number.
        """
        if runtime.registry is None:
            raise Unavailable("sessions need Redis: the runtime has no registry")
        redis = runtime.registry.redis
        namespace = runtime.settings.namespace
        self.runtime = runtime
        self.store = SessionStore(redis, namespace)
        self.policies = PolicyStore(redis, namespace)
        self.lease = _lease() if lease is None else lease
        self.owner = f"{socket.gethostname()}/{os.getpid()}/{runtime.id}.{secrets.token_hex(2)}"
        """This process's name as the owner of a session (host, pid, runtime)."""
        self._runners: dict[str, SessionRunner] = {}
        self._tg: TaskGroup | None = None
        self._following = False  # whether session events wake the runners here (from the first one)
        self.adopter = Adopter(
            self.store,
            self.owner,
            lease=self.lease,
            limit=adopt_limit,
            launch=self._launch,
            here=self._runners,
        )
        self._adopting = False

    async def __aenter__(self) -> Sessions:
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        if self.adopter.users:
            self._adopt()
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        assert self._tg is not None
        self._tg.cancel_scope.cancel()
        return await self._tg.__aexit__(et, e, tb)

    # -- starting and reading ------------------------------------------------------------

    async def start(
        self,
        *,
        user_id: str,
        profile_id: str,
        remote: str,
        objective: str,
        mode: Mode = "manual",
        limits: Limits | None = None,
        constraints: Constraints | None = None,
        remote_action: str = "run",
    ) -> Session:
        """Start a session owned by this process and return it (state ``idle``, then running).

        Raises:
            InvalidParams: an empty objective, an unknown mode, a bad agent name.
            CycleDetected: the local agent would talk to itself.
            PermissionDenied: the user's policy for the local agent does not allow ``remote``
                (:meth:`set_policy`; the default allows nothing).
        """
        try:
            validate_name("local agent", profile_id)
            validate_name("remote agent", remote)
        except ValueError as exc:
            raise InvalidParams(str(exc)) from None
        if not objective.strip():
            raise InvalidParams("a session needs an objective")
        if mode not in MODES:
            raise InvalidParams(f"mode must be one of {', '.join(MODES)}", details={"mode": mode})
        trace_id = secrets.token_hex(16)
        control = Orchestration(
            origin_agent_device_id=profile_id,
            trace_id=trace_id,
            hop_count=1,
            orchestrator_profile_id=profile_id,
        )
        check(await self.policies.get(user_id, profile_id), control, remote)  # and again at each send
        if self._tg is None:
            raise RuntimeError("use Sessions as an async context manager")
        try:  # structs built in Python are not validated: check the bounds as on the wire
            limits = msgspec.convert(msgspec.to_builtins(limits or Limits()), Limits)
            constraints = msgspec.convert(msgspec.to_builtins(constraints or Constraints()), Constraints)
        except msgspec.ValidationError as exc:
            raise InvalidParams(str(exc)) from None
        now = time.time()
        session = Session(
            id="sess_" + secrets.token_hex(12),
            user_id=user_id,
            profile_id=profile_id,
            remote=remote,
            objective=self.runtime.redactor.redact(objective),
            mode=mode,
            limits=limits,
            constraints=constraints,
            remote_action=remote_action,
            started_at=now,
            updated_at=now,
            trace_id=trace_id,
            owner=self.owner,
        )
        try:  # the same bounds as a session read back from Redis
            session = msgspec.convert(msgspec.to_builtins(session), Session)
        except msgspec.ValidationError as exc:
            raise InvalidParams(str(exc)) from None
        await self.store.claim(session.id, self.owner, self.lease)  # first: nobody adopts it meanwhile
        try:
            await self.store.create(session)
        except BaseException:
            with anyio.CancelScope(shield=True), contextlib.suppress(Unavailable):
                await self.store.release(session.id, self.owner)
            raise
        self._launch(session.id)
        self.serve(user_id)
        return session

    def serve(self, *users: str) -> None:
        """Adopt the sessions of ``users`` whose owner is gone (a process that starts a session
        for a user serves that user from then on)."""
        self.adopter.users.update(users)
        if self._tg is not None and self.adopter.users:
            self._adopt()

    async def get(self, session_id: str, user_id: str) -> Session:
        return await self.store.get(session_id, user_id)

    async def sessions(self, user_id: str) -> list[Session]:
        return await self.store.of_user(user_id)

    async def wait(self, session_id: str, user_id: str, *states: str, timeout: float = 30.0) -> Session:
        """The session once it is in one of ``states`` (or ended); TimeoutError after ``timeout``."""
        wanted = set(states) | set(TERMINAL)
        with anyio.fail_after(timeout):
            while True:
                session = await self.store.get(session_id, user_id)
                if session.state in wanted and (
                    session.state != "ready_to_send" or session.review is not None
                ):
                    return session
                await anyio.sleep(0.05)

    # -- the person's controls -----------------------------------------------------------

    async def pause(self, session_id: str, user_id: str) -> Session:
        """Stop at once: nothing more is sent until :meth:`resume` (a step in flight finishes)."""
        return await self._control(
            session_id,
            user_id,
            lambda s: s if s.state == "paused" else move(s, "paused", "paused by the person"),
        )

    async def resume(self, session_id: str, user_id: str) -> Session:
        def change(s: Session) -> Session:
            if s.state != "paused":
                raise InvalidParams(f"session {s.id} is {s.state}, not paused")
            if s.in_flight is not None:  # back into the step under way: its outcome is awaited
                return move(s, "waiting_local" if s.in_flight == "local" else "waiting_remote", "resumed")
            if s.draft is not None or s.takeover:
                return move(s, "ready_to_send", "resumed by the person")
            return move(s, "planning", "resumed by the person")

        return await self._control(session_id, user_id, change)

    async def stop(self, session_id: str, user_id: str) -> Session:
        ending = Ending(kind="user", message="stopped by the person")
        return await self._control(
            session_id, user_id, lambda s: move(s, "stopped", ending.message, ending=ending)
        )

    async def approve(self, session_id: str, user_id: str, text: str | None = None) -> Session:
        """Send the waiting draft, or ``text`` instead of it (an edit)."""

        def change(s: Session) -> Session:
            if s.state != "ready_to_send" or s.draft is None:
                raise InvalidParams(f"session {s.id} has no draft waiting (it is {s.state})")
            draft = s.draft if text is None else _text(text, s)
            by: SentBy = "user_approved" if draft == s.draft else "user_edited"
            return msgspec.structs.replace(s, draft=draft, draft_by=by, review=None)

        return await self._control(session_id, user_id, change)

    async def write(self, session_id: str, user_id: str, text: str) -> Session:
        """Send the person's own message as the next one (after :meth:`take_over`, or instead of a draft)."""

        def change(s: Session) -> Session:
            if s.state != "ready_to_send":
                raise InvalidParams(f"session {s.id} is {s.state}: take over first, and wait for its turn")
            return msgspec.structs.replace(s, draft=_text(text, s), draft_by="user_written", review=None)

        return await self._control(session_id, user_id, change)

    async def take_over(self, session_id: str, user_id: str, on: bool = True) -> Session:
        """The person writes the next messages (``on=False`` hands them back to the local agent)."""

        def change(s: Session) -> Session:
            if s.state in TERMINAL:
                raise InvalidParams(f"session {s.id} has ended ({s.state})")
            if on:  # the local agent's draft, if any, is set aside: the person writes
                review = "take over: write the next message" if s.state == "ready_to_send" else s.review
                return msgspec.structs.replace(s, takeover=True, draft=None, draft_by=None, review=review)
            if s.state == "ready_to_send" and s.draft is None:
                handed = msgspec.structs.replace(s, takeover=False, review=None)
                return move(handed, "planning", "handed back")
            return msgspec.structs.replace(s, takeover=False)

        return await self._control(session_id, user_id, change)

    async def set_policy(self, user_id: str, profile_id: str, policy: SharedCallPolicy) -> None:
        await self.policies.set(user_id, profile_id, policy)

    async def policy(self, user_id: str, profile_id: str) -> SharedCallPolicy:
        return await self.policies.get(user_id, profile_id)

    async def audit(self, profile_id: str, user_id: str) -> list[AuditEntry]:
        return await self.store.audit_entries(profile_id, user_id)

    async def _control(self, session_id: str, user_id: str, change: Callable[[Session], Session]) -> Session:
        await self.store.get(session_id, user_id)  # the caller's, or NotFound
        session = await self.store.update(session_id, change)
        runner = self._runners.get(session_id)
        if runner is not None:
            runner.poke()
        return session

    # -- owning ---------------------------------------------------------------------------

    def _launch(self, session_id: str) -> None:
        """Run the loop of a session whose lease this process has just taken."""
        assert self._tg is not None
        runner = SessionRunner(self.runtime, self.store, self.policies, session_id, self.owner)
        self._runners[session_id] = runner
        if not self._following:
            self._following = True
            self._tg.start_soon(wake_runners, self.store, self._runners)
        self._tg.start_soon(self._own, runner)

    def _adopt(self) -> None:
        if not self._adopting:
            assert self._tg is not None
            self._adopting = True
            self._tg.start_soon(self.adopter.run, self.lease / 2)

    async def _own(self, runner: SessionRunner) -> None:
        """Run a session's loop while renewing its lease; a lost lease or a dead Redis ends it here."""
        try:
            async with anyio.create_task_group() as tg:

                async def renew() -> None:
                    while True:
                        await anyio.sleep(self.lease / 3)
                        try:
                            if not await self.store.claim(runner.id, self.owner, self.lease):
                                log.warning(
                                    "session %s: its lease was taken; this process stops running it",
                                    runner.id,
                                )
                                tg.cancel_scope.cancel()
                        except Unavailable as exc:
                            log.warning("session %s: lease not renewed: %s", runner.id, exc)
                        else:  # read again: a record changed without an event is seen too
                            runner.poke()

                tg.start_soon(renew)
                await self._run(runner)
                tg.cancel_scope.cancel()
        finally:
            self._runners.pop(runner.id, None)
            self.adopter.running.discard(runner.id)
            with anyio.CancelScope(shield=True), anyio.move_on_after(2), contextlib.suppress(Unavailable):
                await self.store.release(runner.id, self.owner)

    async def _run(self, runner: SessionRunner) -> None:
        while True:
            try:
                await runner.run()
                return
            except Unreadable as exc:  # its record is broken: nothing to run
                log.error("session %s: %s; its loop ends", runner.id, exc)
                return
            except LeaseLost as exc:  # adopted elsewhere: that process runs it now
                log.warning("%s; this process stops running it", exc)
                return
            except Unavailable as exc:  # Redis is down: try again shortly
                log.warning("session %s: %s", runner.id, exc)
                await anyio.sleep(1.0)
            except Exception as exc:  # a bug must not end the other sessions
                log.exception("session %s: the loop failed", runner.id)
                try:
                    await self.store.update(
                        runner.id, _failed(f"the session loop failed: {type(exc).__name__}")
                    )
                except Exception:
                    log.exception("session %s: could not record the failure", runner.id)
                return


def _failed(message: str) -> Callable[[Session], Session]:
    ending = Ending(kind="failure", message=message)
    return lambda s: s if s.state in TERMINAL else move(s, "error", message, ending=ending)


def _text(text: str, session: Session) -> str:
    if not text.strip():
        raise InvalidParams("the message is empty")
    if len(text) > session.constraints.max_output_chars:
        raise InvalidParams(f"the message is over {session.constraints.max_output_chars} characters")
    return text


def _lease() -> float:
    text = os.environ.get("A2A_SESSION_LEASE", "")
    try:
        lease = float(text) if text else LEASE
    except ValueError:
        lease = -1.0
    if not 0 < lease < 3600:
        raise ValueError(f"A2A_SESSION_LEASE must be seconds between 0 and 3600, not {text!r}")
    return lease
