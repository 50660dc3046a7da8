"""N processes of one program behind one agent: free ones take requests, exited ones restart.

Each slot of the pool has a supervisor: it starts the program, serves it until it exits,
and starts it again. A process that exited on its own (a crash, an early exit) is
restarted after a back-off that doubles with each exit in a row (``backoff_first`` up to
``backoff_max``, back to the first once a process lived ``backoff_reset`` seconds); one
the channel killed because a request got no terminal frame in time is restarted at once.
An unexpected error of the bridge itself while starting or serving a process is logged
and counted (``failures``), its process is stopped, and the slot restarts with the same
back-off: no error of one slot ends the others.

Whether any process is up (starting, ready, busy or draining) is told to ``on_up`` when it
changes, so the instance can say it is offline while none is.

A request takes the first READY process. When every process is busy or draining it
waits (under the caller's timeout) for one; when no process is up at all (exited,
waiting to restart, not started) it fails at once with UNAVAILABLE saying why, instead
of waiting for a restart that may never succeed.

The pool's tasks run in one task that :meth:`ProcessPool.open` starts and
:meth:`ProcessPool.aclose` stops (the hosting instance enters and leaves a peer's
lifespan from different tasks, which a task group held across both would not allow).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import anyio
from anyio.abc import TaskStatus

from bus.errors import Unavailable
from bus.tasks import TaskSet

from ..prompt.frames import LocalPromptRequest, LocalPromptResponse
from .channel import Channel, State
from .config import StdioConfig
from .pending import ProgressSink
from .process import ProcessSpec
from .stats import StdioStats

__all__ = ["ProcessInfo", "ProcessPool"]

log = logging.getLogger("a2a.stdio")

_UP = (State.STARTING, State.READY, State.BUSY, State.DRAINING)


@dataclass(frozen=True, slots=True)
class ProcessInfo:
    """One slot of the pool now: its process's pid and state, and how the last one ended."""

    index: int
    pid: int | None
    state: str
    """``starting``, ``ready``, ``busy``, ``draining``, ``exited`` (waiting to restart) or ``down``."""
    last_exit: str
    restart_in: float | None


class _Slot:
    __slots__ = ("channel", "index", "last_exit", "restart_at")

    def __init__(self, index: int) -> None:
        self.index = index
        self.channel: Channel | None = None
        self.last_exit = ""
        self.restart_at: float | None = None


class ProcessPool:
    """``size`` processes of ``spec``, supervised and restarted; see the module docstring."""

    def __init__(
        self,
        name: str,
        spec: ProcessSpec,
        size: int,
        config: StdioConfig,
        stats: StdioStats,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if size < 1:
            raise ValueError(f"a pool has at least one process, got {size}")
        self.name = name
        self.spec = spec
        self.config = config
        self.stats = stats
        self._clock = clock
        self._slots = [_Slot(i) for i in range(size)]
        self._changed = anyio.Event()
        self._closing = anyio.Event()
        self._ready = anyio.Event()
        self._stopped = anyio.Event()
        self._tasks = TaskSet()
        self._failure: BaseException | None = None
        self._up = False
        self.on_up: Callable[[bool], None] | None = None
        """Called with whether any process is up, each time that changes."""

    # -- lifecycle -------------------------------------------------------------------------

    async def open(self) -> None:
        """Start every process once (those that fail to start are retried with back-off)."""
        self._tasks.spawn(self._run())
        try:
            await self._ready.wait()
        except BaseException:  # cancelled while starting: nothing may outlive this
            await self.aclose()
            raise
        if self._failure is not None:
            await self.aclose()
            raise self._failure

    async def aclose(self) -> None:
        """Stop every process (stdin closed, SIGTERM, SIGKILL) and the supervisors."""
        self._closing.set()
        with anyio.CancelScope(shield=True):
            with anyio.move_on_after(3 * self.config.close_grace + 5.0):
                await self._stopped.wait()
            await self._tasks.aclose()

    async def _run(self) -> None:
        try:
            async with anyio.create_task_group() as tg:
                for slot in self._slots:
                    await tg.start(self._supervise, slot)
                self._ready.set()
                await self._closing.wait()
                async with anyio.create_task_group() as closers:
                    for slot in self._slots:
                        if slot.channel is not None:
                            closers.start_soon(slot.channel.close, self.config.close_grace)
                tg.cancel_scope.cancel()
        except Exception as exc:  # a bug: say so where open() or the log shows it
            log.exception("the process pool of %s failed", self.name)
            self._failure = exc
        finally:
            self._ready.set()
            self._stopped.set()
            self._notify()

    async def _supervise(self, slot: _Slot, *, task_status: TaskStatus[None]) -> None:
        delay = self.config.backoff_first
        started = False
        while not self._closing.is_set():
            channel = Channel(f"{self.name}[{slot.index}]", self.spec, self.config, self.stats, self._notify)
            slot.channel, slot.restart_at = channel, None
            born = self._clock()
            try:
                await channel.start()
            except Exception as exc:
                slot.channel, slot.last_exit = None, f"could not be started: {_plain(exc)}"
                log.error("%s %s", channel.label, slot.last_exit)
                if not isinstance(exc, OSError):
                    self.stats.failures += 1
                serving = False
            else:
                serving = True
            if not started:
                started = True
                task_status.started()
            if serving:
                try:
                    await channel.serve()  # stops the process whatever ends it
                    slot.last_exit = channel.exit_reason
                except Exception as exc:
                    self.stats.failures += 1
                    slot.last_exit = f"was stopped after an internal error ({_plain(exc)})"
                    log.error("%s %s", channel.label, slot.last_exit)
                    log.debug("%s: the internal error", channel.label, exc_info=exc)
            self._notify()
            if self._closing.is_set():
                return
            if channel.killed:
                wait = 0.0  # killed for a stale request: the program itself is fine
            else:
                self.stats.crashes += 1
                if self._clock() - born >= self.config.backoff_reset:
                    delay = self.config.backoff_first
                wait, delay = delay, min(delay * 2, self.config.backoff_max)
            slot.restart_at = self._clock() + wait
            if wait:
                log.warning("%s restarts in %.3g s", channel.label, wait)
            self._notify()
            with anyio.move_on_after(wait):
                await self._closing.wait()
            if self._closing.is_set():
                return
            self.stats.restarts += 1

    def _notify(self) -> None:
        """Wake the requests waiting for a process to become free or to go down; tell ``on_up``."""
        changed, self._changed = self._changed, anyio.Event()
        changed.set()
        up = not self._stopped.is_set() and any(
            slot.channel is not None and slot.channel.state in _UP for slot in self._slots
        )
        if up is not self._up:
            self._up = up
            if self.on_up is not None:
                self.on_up(up)

    @property
    def up(self) -> bool:
        """Whether any process is up (starting, ready, busy or draining)."""
        return self._up

    # -- requests --------------------------------------------------------------------------

    async def request(
        self, frame: LocalPromptRequest, on_progress: ProgressSink | None
    ) -> LocalPromptResponse:
        """Send ``frame`` to a free process and return its response (see :meth:`Channel.request`).

        Raises:
            Unavailable: no process is up (at once), or the one taking it exited.
        """
        while True:
            up = False
            for slot in self._slots:
                channel = slot.channel
                if channel is None:
                    continue
                if channel.state is State.READY:
                    return await channel.request(frame, on_progress)
                up = up or channel.state in _UP
            if not up or self._closing.is_set():
                raise Unavailable(self._down_message())
            await self._changed.wait()

    def processes(self) -> list[ProcessInfo]:
        """Each slot now."""
        now = self._clock()
        out = []
        for slot in self._slots:
            channel = slot.channel
            out.append(
                ProcessInfo(
                    index=slot.index,
                    pid=None if channel is None else channel.pid,
                    state="down" if channel is None else channel.state.value,
                    last_exit=slot.last_exit,
                    restart_in=None if slot.restart_at is None else max(0.0, slot.restart_at - now),
                )
            )
        return out

    def _down_message(self) -> str:
        if self._closing.is_set():
            return f"the stdio agent {self.name} is stopping"
        parts = []
        for slot in self._slots:
            channel = slot.channel
            what = slot.last_exit or "not started"
            if slot.restart_at is not None:
                what += f", restarts in {max(0.0, slot.restart_at - self._clock()):.2g} s"
            if channel is not None and (tail := channel.stderr.tail(300)):
                what += f"; stderr: {tail}"
            parts.append(f"process {slot.index} {what}")
        return f"no process of the stdio agent {self.name} is running: " + "; ".join(parts)[:1500]


def _plain(exc: BaseException) -> str:
    """An error in a few words for a status line: its type and message, cut."""
    text = str(exc) if isinstance(exc, OSError) else f"{type(exc).__name__}: {exc}"
    return text[:300]
