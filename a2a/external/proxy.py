"""A remote A2A agent as a :class:`~a2a.core.peer.Peer`: each bus call becomes one A2A task.

Per call (``invoke``):

1. the action and parameters become a message (``mapping``: a text part for
   ``{"text": ...}``, else a data part ``{"action", "params"}`` for a skill that takes data),
   in the remote context of the call's conversation when an earlier call of it learned one
   (``conversations``: the same user and conversation id, same ``contextId``), and
   continuing its task when the last call left that ``input-required`` (the remote's
   question came back as INPUT_REQUIRED, ``details.conversationId`` naming the
   conversation to answer in);
2. it goes out with ``SendStreamingMessage`` when the card says the agent streams, else
   with a non-blocking ``SendMessage`` whose task is then polled with ``GetTask`` (so the
   task id is known at once and a withdrawn call can cancel it); the call's remaining
   time is the HTTP deadline;
3. the final task becomes the result or a typed error (``progress``); every error's
   message is redacted with the runtime's redactor. A stream that ends with the task
   completed but carried neither its artifacts nor a status message is followed by one
   ``GetTask``, whose artifacts (or status message) are the result.

When the call is cancelled (the caller withdrew, the deadline passed, the instance stops)
or fails mid-way, a task the remote still runs gets a ``CancelTask`` (shielded from the
cancellation, at most ``cancel_timeout`` seconds) before the cancellation goes on. A stream
that breaks once the task is known is followed again (``SubscribeToTask``, else ``GetTask``),
and a server that stops answering is asked again until the deadline; one that never
answers again by then leaves the call AGENT_LOST (it may have done part of the work), not
NO_RESPONDERS (which says the call never ran, so routing may retry it elsewhere).

The peer keeps the remote's :class:`discovery.trust.TrustTracker` (its base and card
signature state); ``peer_agent(..., trust=peer.tracker)`` (as ``attach`` does) counts each
forwarded call's outcome and latency in it, and the instance publishes
:meth:`RemotePeer.trust_score` with every heartbeat.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any

import anyio
import httpx

from bus.errors import (
    A2AError,
    AgentLost,
    DeadlineExceeded,
    InputRequired,
    NoResponders,
    PermissionDenied,
    UnknownAction,
)
from bus.tasks import TaskSet
from discovery.profile import CardSignature
from discovery.trust import TrustTracker
from transports.a2a_http import AgentCard, Message, Task

from ..core.context import Context
from ..core.peer import Peer
from .client import DEFAULT_MAX_BODY, DEFAULT_MAX_EVENT, A2AClient
from .conversations import Conversations, Thread
from .errors import MalformedResponse
from .interfaces import Endpoint
from .mapping import DEFAULT_ACTION, request_message, skill_accepts_data
from .progress import Progress, outcome

__all__ = ["CANCEL_TIMEOUT", "HEALTH_INTERVAL", "RemotePeer"]

log = logging.getLogger("a2a.external")

HEALTH_INTERVAL = 1.0
"""Seconds between health probes of the remote's server (the default heartbeat interval)."""
CANCEL_TIMEOUT = 2.0
"""Seconds a withdrawn call waits for the remote to take its ``CancelTask``."""
POLL_FIRST, POLL_MAX = 0.05, 1.0
"""Seconds between ``GetTask`` polls: doubling from the first to the most."""
INPUT_REQUIRED = "TASK_STATE_INPUT_REQUIRED"
_UNANSWERED = (NoResponders, AgentLost, DeadlineExceeded)
"""Failures after which the remote may still hold the task waiting for input."""
_MARGIN = 0.05
"""Seconds before the bus deadline at which the proxy gives up itself, to withdraw the task in time."""


class RemotePeer(Peer):
    """Serves a bus agent's actions by calling the remote A2A agent at ``endpoint``.

    Args:
        card: the remote's agent card (skills, input modes, streaming).
        headers: added to every HTTP request (API key, bearer token).
        tracker: the remote's trust (default: base 0.5, card unsigned); give it to
            ``peer_agent(trust=...)`` so that calls are counted and the score published.
        streaming: override the card's ``capabilities.streaming``.
        health_url: a URL of the remote's server (its card's) fetched every
            ``health_interval`` seconds while the instance serves: the instance reports
            itself ``offline`` from the first probe the server does not answer (in time,
            or with anything but a 5xx) until one it answers again. None: no probe.
        refusal: why no call is forwarded (the card failed verification with the keys
            the operator trusts): every call is PERMISSION_DENIED with it, and the
            instance reports itself ``offline`` (:meth:`watch_ready`).
        http: an ``httpx.AsyncClient`` to share (not closed here); by default the peer
            opens its own when the instance starts.
    """

    def __init__(
        self,
        card: AgentCard,
        endpoint: Endpoint,
        *,
        headers: Mapping[str, str] | None = None,
        tracker: TrustTracker | None = None,
        streaming: bool | None = None,
        cancel_timeout: float = CANCEL_TIMEOUT,
        max_body: int = DEFAULT_MAX_BODY,
        max_event: int = DEFAULT_MAX_EVENT,
        clock: Callable[[], float] = time.monotonic,
        http: httpx.AsyncClient | None = None,
        refusal: str | None = None,
        health_url: str | None = None,
        health_interval: float = HEALTH_INTERVAL,
    ) -> None:
        self.card = card
        self.endpoint = endpoint
        self.headers = dict(headers or {})
        self.tracker = tracker if tracker is not None else TrustTracker()
        self.streaming = bool(card.capabilities.streaming) if streaming is None else streaming
        self.cancel_timeout = cancel_timeout
        self.skills = {skill.id: skill for skill in card.skills}
        self._limits = (max_body, max_event)
        self._clock = clock
        self._http = http
        self._client: A2AClient | None = None
        self.refusal = refusal
        self.health_url = health_url
        self.health_interval = health_interval
        self.reachable = True
        """Whether the last health probe was answered (True before any)."""
        self._probes = TaskSet()
        self._on_ready: Callable[[bool], None] | None = None
        self.conversations = Conversations()
        """The remote context of each bus conversation (``conversations``)."""

    # -- trust -----------------------------------------------------------------------------

    @property
    def card_signature(self) -> CardSignature:
        return self.tracker.signature

    def trust_score(self, now: float | None = None) -> float:
        """The remote's trust score now (``discovery.trust``): what its instance publishes."""
        return self.tracker.score(self._clock() if now is None else now)

    # -- readiness ---------------------------------------------------------------------------

    @property
    def ready(self) -> bool:
        """Whether the instance is available: the card was not refused, the server answers."""
        return self.refusal is None and self.reachable

    def watch_ready(self, on_change: Callable[[bool], None]) -> None:
        """Call ``on_change`` with :attr:`ready` now and whenever it changes (the hosting
        instance reports itself ``offline`` while it is False)."""
        self._on_ready = on_change
        on_change(self.ready)

    async def _watch(self, client: A2AClient, url: str) -> None:
        """Probe the server every ``health_interval`` seconds; say when it stops or starts answering."""
        timeout = min(max(self.health_interval, 0.5), 5.0)
        while True:
            await anyio.sleep(self.health_interval)
            up = await client.probe(url, timeout)
            if up is self.reachable:
                continue
            self.reachable = up
            if up:
                log.info("%s answers again: available", url)
            else:
                log.warning("%s does not answer: offline until it does", url)
            if self._on_ready is not None:
                self._on_ready(self.ready)

    # -- lifespan ----------------------------------------------------------------------------

    async def __aenter__(self) -> RemotePeer:
        max_body, max_event = self._limits
        self._client = A2AClient(
            self.endpoint, headers=self.headers, http=self._http, max_body=max_body, max_event=max_event
        )
        self._probes = TaskSet()
        if self.health_url is not None and self.health_interval > 0 and self.refusal is None:
            self._probes.spawn(self._watch(self._client, self.health_url))
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._probes.aclose()
        client, self._client = self._client, None
        self._on_ready = None
        if client is not None:
            await client.aclose()

    # -- calls -----------------------------------------------------------------------------

    async def invoke(self, ctx: Context, action: str, params: dict[str, Any]) -> Any:
        client = self._client
        if client is None:
            raise RuntimeError("the remote peer is not open (use it as an instance's lifespan)")
        if self.refusal is not None:
            raise PermissionDenied(self.refusal, details={"signature": self.tracker.signature})
        try:
            skill = self.skills.get(action)
            if skill is None and action != DEFAULT_ACTION:
                raise UnknownAction(f"the remote agent has no skill {action!r}", details={"action": action})
            data = skill is not None and skill_accepts_data(self.card, skill)
            key = (ctx.user_id or "", ctx.conversation_id)
            thread = self.conversations.get(key)
            message = request_message(
                action,
                params,
                skill=skill is not None,
                data=data,
                context_id=thread.context_id if thread is not None else "",
                task_id=thread.task_id if thread is not None else "",
            )
            progress = Progress()
            try:
                answer = await self._exchange(client, message, progress, ctx.remaining() - _MARGIN)
            except A2AError as exc:
                self._remember(key, thread, progress, refused=not isinstance(exc, _UNANSWERED))
                raise
            self._remember(key, thread, progress)
            return outcome(answer)
        except InputRequired as exc:
            exc.message = ctx.services.redactor.redact(exc.message)
            exc.details["conversationId"] = ctx.conversation_id
            raise
        except A2AError as exc:
            exc.message = ctx.services.redactor.redact(exc.message)
            raise

    def _remember(
        self, key: tuple[str, str], thread: Thread | None, progress: Progress, *, refused: bool = False
    ) -> None:
        """Keep the conversation's remote context, and its task while that waits for input.

        A call that learned nothing keeps what was known, but no longer names a task the
        remote ``refused`` to continue.
        """
        if progress.context_id:
            waiting = progress.status is not None and progress.status.state == INPUT_REQUIRED
            self.conversations.record(key, progress.context_id, progress.task_id or "" if waiting else "")
        elif refused and thread is not None and thread.task_id:
            self.conversations.record(key, thread.context_id)

    async def _exchange(
        self, client: A2AClient, message: Message, progress: Progress, timeout: float
    ) -> Task | Message:
        """Send ``message``, follow its task to the end in ``progress``; withdraw the task if that fails."""
        try:
            if timeout <= 0:
                raise DeadlineExceeded("no time left to call the remote agent")
            with anyio.fail_after(timeout):
                if self.streaming:
                    try:
                        async with contextlib.aclosing(client.stream(message, timeout)) as events:
                            async for event in events:
                                if progress.apply(event):
                                    return await self._completed(client, progress, timeout)
                    except AgentLost:
                        if progress.task_id is None:
                            raise
                        log.info("the stream of task %s broke; following it again", progress.task_id)
                else:
                    first = await client.send(message, timeout, return_immediately=True)
                    if isinstance(first, Message):
                        progress.apply_message(first)
                        return first
                    progress.apply_task(first)
                return await self._follow(client, progress, timeout)
        except BaseException as exc:
            await self._withdraw(client, progress)
            lost = exc if isinstance(exc, NoResponders) else progress.lost
            if isinstance(exc, NoResponders | TimeoutError) and lost is not None and progress.task_id:
                # The task was running: whatever it did may have been done.
                raise AgentLost(f"the remote agent stopped answering mid-task: {lost.message}") from None
            if isinstance(exc, TimeoutError) and not isinstance(exc, A2AError):
                raise DeadlineExceeded(f"the remote agent did not finish within {timeout:.3g} s") from None
            raise

    async def _completed(self, client: A2AClient, progress: Progress, timeout: float) -> Task | Message:
        """The final answer; a task that completed with no result in its stream is read with ``GetTask``."""
        if progress.result_missing and progress.task_id is not None:
            progress.apply_task(await client.get(progress.task_id, timeout))
        return progress.result()

    async def _follow(self, client: A2AClient, progress: Progress, timeout: float) -> Task | Message:
        """Follow a task whose stream broke or closed early (or that is polled) to its end.

        A streaming remote is asked ``SubscribeToTask``; one that refuses it (the task has
        just ended, say) or whose subscription closes early is polled with ``GetTask``. A
        server that does not answer (connection refused or broken, 502/503) is asked again,
        backing off, until the deadline, which then ends the call AGENT_LOST.
        """
        delay = POLL_FIRST
        subscribe = self.streaming
        while not progress.finished:
            if progress.task_id is None:
                raise MalformedResponse("the remote agent's answer named no task and carried no message")
            try:
                if subscribe:
                    async with contextlib.aclosing(client.subscribe(progress.task_id, timeout)) as events:
                        async for event in events:
                            progress.lost = None
                            if progress.apply(event):
                                return await self._completed(client, progress, timeout)
                    subscribe = False
                else:
                    progress.apply_task(await client.get(progress.task_id, timeout))
                    progress.lost = None
                    if progress.finished:
                        break
            except (NoResponders, AgentLost) as exc:
                progress.lost = exc
                log.info("task %s at %s: %s; asking again", progress.task_id, self.endpoint.url, exc.message)
            except A2AError:
                if not subscribe:
                    raise
                subscribe = False
                continue
            await anyio.sleep(delay)
            delay = min(delay * 2, POLL_MAX)
        return progress.result()

    async def _withdraw(self, client: A2AClient, progress: Progress) -> None:
        """Cancel the remote task, if one runs, whatever cancels this call."""
        task_id = progress.task_id
        if task_id is None or progress.finished:
            return
        with anyio.CancelScope(shield=True):
            try:
                await client.cancel(task_id, self.cancel_timeout)
            except A2AError as exc:
                log.info("could not cancel remote task %s at %s: %s", task_id, self.endpoint.url, exc)
