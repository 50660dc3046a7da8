"""One agent process and its NDJSON prompt channel, with at most one request in flight.

A :class:`Channel` starts the program (``start``), then reads its stdout and stderr
until it exits (``serve``). :meth:`Channel.request` writes one request frame and waits
for its terminal frame, forwarding progress frames on the way. The rules:

- **one in flight**: a request is only written to a READY channel; the channel is BUSY
  until that request's terminal frame arrives. A request whose caller gave up (a timeout,
  a withdrawn call) leaves the channel DRAINING: the process has ``grace`` seconds to send
  the terminal frame anyway (then it is READY again), else its process group is killed
  and the pool starts a new one, so the next request never meets a stale answer.
- **protocol violations** (an oversized line, a line that is not UTF-8, not JSON or not a
  frame, an unknown ``request_id``, a second terminal frame, anything else a line can do
  wrong) are counted and logged at a bounded rate, and never fail another request or stop
  the channel. A malformed response frame that names the request in flight ends that
  request with AGENT_ERROR (the process has answered, if badly); one over ``max_line``
  bytes that names it (at its start or end) ends it with PAYLOAD_TOO_LARGE once the line
  has been read, instead of leaving it to its deadline.
- **exit**: a process that exits fails the request in flight with UNAVAILABLE, naming the
  exit code and the last lines of its stderr.
- **stderr** is read continuously (a process that writes a lot never blocks on it) into
  the log, with the agent name and process index as prefix.

Processes are started by :func:`.process.spawn`: on Linux under a launcher that kills
everything a program started (even in a session of its own) when the program ends, when
the channel kills it, and when this process dies. :meth:`Channel.close` closes stdin,
waits, sends SIGTERM, waits, then SIGKILL.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections import deque
from collections.abc import Callable

import anyio
from anyio.abc import TaskGroup

from bus.errors import A2AError, AgentError, PayloadTooLarge, Unavailable

from ..prompt.frames import (
    FrameError,
    LocalPromptProgress,
    LocalPromptRequest,
    LocalPromptResponse,
    decode_output,
    encode_request,
    peek_oversized,
    peek_response_id,
)
from .config import StdioConfig
from .lines import Line, LineReader
from .pending import Pending, ProgressSink
from .process import Child, ProcessSpec, exit_reason, spawn
from .stats import StderrLog, StdioStats

__all__ = ["Channel", "State"]

log = logging.getLogger("a2a.stdio")

_RECENT = 32  # answered request ids remembered to tell a second terminal frame from a stranger
_EOF_WAIT = 0.5  # seconds after an exit for the pipes' last lines
_STDERR_LINE = 4096
_QUOTE = 120  # bytes of an offending line quoted in a warning


class State(enum.Enum):
    STARTING = "starting"
    READY = "ready"
    BUSY = "busy"
    DRAINING = "draining"
    EXITED = "exited"


class Channel:
    """One agent process: its stdin for requests, its stdout for frames, its stderr for the log."""

    def __init__(
        self,
        label: str,
        spec: ProcessSpec,
        config: StdioConfig,
        stats: StdioStats,
        on_change: Callable[[], None],
    ) -> None:
        self.label = label
        self.spec = spec
        self.config = config
        self.stats = stats
        self.state = State.STARTING
        self.pid: int | None = None
        self.returncode: int | None = None
        self.exit_reason = ""
        self.killed = False
        """True when the channel killed its process because a request got no terminal frame in time."""
        self.exited = anyio.Event()
        self.stderr = StderrLog(
            label, stats, tail_lines=config.stderr_tail, per_second=config.stderr_per_second
        )
        self._on_change = on_change
        self._child: Child | None = None
        self._proc: asyncio.subprocess.Process | None = None
        self._pending: Pending | None = None
        self._recent: deque[str] = deque(maxlen=_RECENT)
        self._tg: TaskGroup | None = None
        self._closing = False
        self._out_done = anyio.Event()
        self._err_done = anyio.Event()

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Start the process (OSError when it cannot be: not found, not executable...)."""
        self._child = await spawn(self.spec)
        self._proc = self._child.proc
        self.pid = self._child.pid
        self.stats.started += 1
        log.info("%s started: pid %d", self.label, self.pid)

    async def serve(self) -> None:
        """Read the process's output until it exits; then fail what is in flight and clean up."""
        proc = self._proc
        assert proc is not None and proc.stdout is not None and proc.stderr is not None
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                tg.start_soon(self._pump_stdout, proc, proc.stdout)
                tg.start_soon(self._pump_stderr, proc.stderr)
                self._set_state(State.READY)
                await proc.wait()
                with anyio.move_on_after(_EOF_WAIT):  # an answer written just before exiting
                    await self._out_done.wait()
                    await self._err_done.wait()
                tg.cancel_scope.cancel()
        finally:
            self._tg = None
            with anyio.CancelScope(shield=True):
                await self._reap(proc)
            self._finish(proc.returncode)

    async def close(self, grace: float) -> None:
        """Stop the process: close its stdin, wait, SIGTERM, wait, SIGKILL (its whole group)."""
        self._closing = True
        proc = self._proc
        if proc is None or self.exited.is_set():
            return
        if proc.stdin is not None:
            proc.stdin.close()
        for name, stop in (("SIGTERM", self._terminate), ("SIGKILL", self._kill)):
            with anyio.move_on_after(grace):
                await self.exited.wait()
            if self.exited.is_set():
                return
            log.info("%s did not exit within %.3g s; sending %s", self.label, grace, name)
            stop()
        with anyio.move_on_after(grace):
            await self.exited.wait()

    def _set_state(self, state: State) -> None:
        self.state = state
        self._on_change()

    def _terminate(self) -> None:
        if self._child is not None:
            self._child.terminate()

    def _kill(self) -> None:
        if self._child is not None:
            self._child.kill()  # the program and whatever it started

    async def _reap(self, proc: asyncio.subprocess.Process) -> None:
        child = self._child
        assert child is not None
        if proc.returncode is None:
            child.kill()
            with anyio.move_on_after(2.0):
                await proc.wait()
        if proc.returncode is None:
            child.kill(force=True)
            with anyio.move_on_after(3.0):
                await proc.wait()
        child.close()  # what the program left running in its group

    def _finish(self, returncode: int | None) -> None:
        self.stderr.flush()
        self.returncode = returncode
        self.exit_reason = exit_reason(returncode)
        self.state = State.EXITED
        pending, self._pending = self._pending, None
        if pending is not None and not pending.answered.is_set():
            what = "was stopped" if self._closing else self.exit_reason
            pending.finish(error=Unavailable(self.describe(f"{what} during the request")))
        log.log(
            logging.INFO if self._closing else logging.WARNING,
            "%s (pid %s) %s",
            self.label,
            self.pid,
            self.exit_reason,
        )
        self.exited.set()
        self._on_change()

    def describe(self, what: str) -> str:
        """``the agent process NAME[i] (pid N) <what>``, with the tail of its stderr."""
        tail = self.stderr.tail()
        return f"the agent process {self.label} (pid {self.pid}) {what}" + (
            f"; stderr: {tail}" if tail else ""
        )

    # -- requests --------------------------------------------------------------------------

    async def request(
        self, frame: LocalPromptRequest, on_progress: ProgressSink | None
    ) -> LocalPromptResponse:
        """Write ``frame`` and return its terminal response.

        Raises:
            Unavailable: the process is not ready, or exited before answering.
            AgentError: the process answered with a malformed response frame.
        """
        if self.state is not State.READY or self._closing:
            raise Unavailable(self.describe(f"is {self.state.value}"))
        pending = self._pending = Pending(frame.request_id)
        self._set_state(State.BUSY)
        try:
            await self._write(pending, encode_request(frame))
            return await pending.outcome(on_progress)
        except BaseException:
            if not pending.answered.is_set():
                self._abandon(pending)
            raise

    async def _write(self, pending: Pending, data: bytes) -> None:
        proc = self._proc
        assert proc is not None and proc.stdin is not None
        self.stats.requests += 1
        try:
            proc.stdin.write(data)
            await proc.stdin.drain()
        except (ConnectionError, OSError):
            # The process is gone or going; its exit says why.
            with anyio.move_on_after(_EOF_WAIT * 2):
                await pending.answered.wait()
            if pending.error is not None:
                raise pending.error from None
            raise Unavailable(self.describe("does not read its stdin")) from None

    def _abandon(self, pending: Pending) -> None:
        """The caller is gone: give the process ``grace`` seconds to finish, then kill it."""
        pending.abandoned = True
        if self._pending is pending and self.state is State.BUSY:
            self._set_state(State.DRAINING)
        tg = self._tg
        if tg is not None:
            tg.start_soon(self._drain, pending)

    async def _drain(self, pending: Pending) -> None:
        with anyio.move_on_after(self.config.grace):
            await pending.answered.wait()
        if pending.answered.is_set():
            return
        log.warning(
            "%s sent no terminal frame for %s within %.3g s after its caller gave up; killing it",
            self.label,
            pending.request_id,
            self.config.grace,
        )
        self.killed = True
        self.stats.killed += 1
        self._kill()

    def _answer(
        self, pending: Pending, response: LocalPromptResponse | None = None, error: A2AError | None = None
    ) -> None:
        pending.finish(response, error)
        self._pending = None
        self._recent.append(pending.request_id)
        self.stats.answered += 1
        if self.state in (State.BUSY, State.DRAINING):
            self._set_state(State.READY)

    # -- output ----------------------------------------------------------------------------

    async def _pump_stdout(self, proc: asyncio.subprocess.Process, stream: asyncio.StreamReader) -> None:
        reader = LineReader(stream, self.config.max_line)
        try:
            while (line := await reader.readline()) is not None:
                try:
                    self._on_line(line)
                except Exception as exc:  # whatever a line does, it is one line's fault
                    self._violation("bad line", f"{type(exc).__name__}: {exc}"[:200])
        except (ConnectionError, OSError) as exc:
            log.warning("%s: reading stdout failed: %s", self.label, exc)
        finally:
            self._out_done.set()
        with anyio.move_on_after(1.0):
            await proc.wait()
        if proc.returncode is None and not self._closing:
            log.warning("%s closed its stdout but keeps running; killing it", self.label)
            self._kill()  # a fault of the program: restarted with back-off

    async def _pump_stderr(self, stream: asyncio.StreamReader) -> None:
        reader = LineReader(stream, _STDERR_LINE)
        try:
            while (line := await reader.readline()) is not None:
                self.stderr.line(line.data, line.complete)
        except (ConnectionError, OSError) as exc:
            log.warning("%s: reading stderr failed: %s", self.label, exc)
        finally:
            self._err_done.set()

    def _violation(self, kind: str, detail: str) -> None:
        self.stats.violations(kind, f"{self.label}: {detail}")

    def _on_line(self, line: Line) -> None:
        """One stdout line: a frame for the request in flight, or a counted violation."""
        pending = self._pending
        if not line.complete:
            self._violation("oversized line", f"a line over {self.config.max_line} bytes was dropped")
            if pending is not None and peek_oversized(line.data, line.tail) == pending.request_id:
                too_large = f"the agent's answer is over the limit of {self.config.max_line} bytes a line"
                self._answer(pending, error=PayloadTooLarge(too_large))
            return
        data = line.data
        if not data.strip():
            return
        try:
            frame = decode_output(data)
        except FrameError as exc:
            if pending is not None and peek_response_id(data) == pending.request_id:
                self._violation("malformed response", f"{exc}")
                self._answer(pending, error=AgentError(f"the agent sent a malformed response frame: {exc}"))
            else:
                self._violation(exc.kind, f"{exc}: {data[:_QUOTE]!r}")
            return
        current = pending is not None and frame.request_id == pending.request_id
        if isinstance(frame, LocalPromptResponse):
            if current:
                assert pending is not None
                self._answer(pending, response=frame)
            elif frame.request_id in self._recent:
                self._violation(
                    "duplicate terminal", f"a second terminal frame for {frame.request_id[:64]!r}"
                )
            else:
                self._violation("unknown request_id", f"a response for {frame.request_id[:64]!r}")
        elif isinstance(frame, LocalPromptProgress):
            if current:
                assert pending is not None
                if pending.push(frame.text):
                    self.stats.progress += 1
            elif frame.request_id not in self._recent:
                self._violation("unknown request_id", f"progress for {frame.request_id[:64]!r}")
