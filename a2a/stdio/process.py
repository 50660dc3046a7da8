"""What to run for a stdio agent, checked before anything starts; starting it, stopping it
with everything it started; how its exits read.

On Linux a program runs under a small launcher (``_guard.py``, see there) that keeps all
its descendants findable and kills them when the program ends, when asked, and when this
process dies, however it dies. Elsewhere the program runs directly in a session of its
own and its process group is what gets killed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio

from ..processes import die_with_parent

__all__ = ["Child", "ProcessSpec", "exit_reason", "spawn"]

GUARD = str(Path(__file__).with_name("_guard.py"))
GUARDED = sys.platform.startswith("linux") and bool(sys.executable)
"""Whether programs run under the launcher (Linux: it needs PR_SET_CHILD_SUBREAPER and /proc)."""
_HANDSHAKE = 10.0  # seconds for the launcher to start (a Python without site: ~10 ms when idle)


@dataclass(frozen=True, slots=True)
class ProcessSpec:
    """A program to run: its arguments, working directory and full environment (None: inherited)."""

    command: tuple[str, ...]
    cwd: str | None = None
    env: Mapping[str, str] | None = None

    @classmethod
    def build(
        cls,
        command: Sequence[str],
        *,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> ProcessSpec:
        """Check ``command`` can run: ``env`` is added to this process's environment.

        The program is looked up as the child will look it up: a name without ``/`` on the
        ``PATH`` of its environment, a path relative to ``cwd``.

        Raises:
            ValueError: no command, a ``cwd`` that is not a directory, a program that is
                not found or not executable.
        """
        if isinstance(command, str):
            raise ValueError("the command is a sequence of arguments, not one string")
        args = tuple(str(a) for a in command)
        if not args or not args[0]:
            raise ValueError("a stdio agent needs a command to run")
        where = None if cwd is None else Path(cwd)
        if where is not None and not where.is_dir():
            raise ValueError(f"the working directory {str(where)!r} is not a directory")
        full_env = None if env is None else {**os.environ, **env}
        program = args[0]
        if os.sep in program:
            path = Path(program) if where is None else where / program
            found = path.is_file() and os.access(path, os.X_OK)
        else:
            found = shutil.which(program, path=(full_env or os.environ).get("PATH", os.defpath)) is not None
        if not found:
            raise ValueError(f"command not found or not executable: {program!r}")
        return cls(args, None if where is None else str(where), full_env)


def exit_reason(returncode: int | None) -> str:
    """``exited with code 3``, ``was killed by SIGKILL``, ``was lost`` (no exit status)."""
    if returncode is None:
        return "was lost"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"was killed by {name}"
    return f"exited with code {returncode}"


class Child:
    """A started program: the process to wait for (its launcher, when guarded) and how to stop it."""

    def __init__(self, proc: asyncio.subprocess.Process, pid: int, control: socket.socket | None) -> None:
        self.proc = proc
        self.pid = pid
        """The program's own pid (also its process group)."""
        self._control = control

    def terminate(self) -> None:
        """SIGTERM to the program's process group (the launcher passes it on)."""
        target = -self.pid if self._control is None else self.proc.pid
        _kill(target, signal.SIGTERM)

    def kill(self, *, force: bool = False) -> None:
        """SIGKILL to the program and everything it started (``force``: to the launcher's and the
        program's process groups, for a launcher that does not answer)."""
        control = self._control
        if control is not None and not force:
            try:
                control.send(b"k")  # the launcher kills the whole tree, then itself
                return
            except OSError:
                pass  # it is gone already: its group and the program's are what is left
        if control is not None:
            _kill(-self.proc.pid, signal.SIGKILL)
        _kill(-self.pid, signal.SIGKILL)

    def close(self) -> None:
        """Once the process was reaped: kill what is left in its group, and let go of the launcher."""
        _kill(-self.pid, signal.SIGKILL)
        if self._control is not None:
            self._control.close()  # end of file: a launcher still running kills everything


def _kill(target: int, sig: signal.Signals) -> None:
    """``kill(2)``: a negative target is a process group."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if target < 0:
            os.killpg(-target, sig)
        else:
            os.kill(target, sig)


async def spawn(spec: ProcessSpec) -> Child:
    """Start ``spec`` with pipes for stdin, stdout and stderr.

    Raises:
        OSError: it cannot be started (not found, not executable, no launcher).
    """
    pipe = asyncio.subprocess.PIPE
    if not GUARDED:
        proc = await asyncio.create_subprocess_exec(
            *spec.command,
            cwd=spec.cwd,
            env=spec.env,
            start_new_session=True,
            preexec_fn=die_with_parent,
            stdin=pipe,
            stdout=pipe,
            stderr=pipe,
        )
        return Child(proc, proc.pid, None)
    ours, theirs = socket.socketpair()
    try:
        proc = await asyncio.create_subprocess_exec(
            *(sys.executable, "-I", "-S", GUARD, str(theirs.fileno()), "--", *spec.command),
            cwd=spec.cwd,
            env=spec.env,
            start_new_session=True,
            pass_fds=(theirs.fileno(),),
            stdin=pipe,
            stdout=pipe,
            stderr=pipe,
        )
    except BaseException:
        ours.close()
        raise
    finally:
        theirs.close()
    try:
        answer = await _handshake(ours)
        said, _, rest = answer.partition(b" ")
        if said == b"ok" and rest.isdigit():
            return Child(proc, int(rest), ours)
        code, _, message = rest.partition(b" ")
        if said == b"error" and code.isdigit():
            raise OSError(int(code), message.decode(errors="replace").strip()[:300])
        raise OSError(f"the launcher of {spec.command[0]!r} did not start it")
    except BaseException:
        ours.close()  # a launcher still running kills what it started, and exits
        if proc.stdin is not None:
            proc.stdin.close()
        with anyio.CancelScope(shield=True), anyio.move_on_after(5.0):
            await proc.wait()
        _kill(-proc.pid, signal.SIGKILL)
        raise


async def _handshake(control: socket.socket) -> bytes:
    """The launcher's one line (without newline); empty when it ended without one or took too long."""
    control.setblocking(False)
    data = b""
    with anyio.move_on_after(_HANDSHAKE):
        while b"\n" not in data and len(data) < 1024:
            await anyio.wait_readable(control)
            try:
                chunk = control.recv(1024)
            except BlockingIOError:
                continue
            except OSError:
                break
            if not chunk:
                break
            data += chunk
    return data.partition(b"\n")[0]
