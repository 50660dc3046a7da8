"""The launcher between the serving process and one agent program (Linux), so nothing it
starts outlives it.

The channel runs ``python -I -S _guard.py FD -- COMMAND ...`` in a session of its own; FD
is one end of a socket pair whose other end only the serving process holds. The launcher:

- makes itself a child subreaper (``PR_SET_CHILD_SUBREAPER``): whatever the program starts
  stays among the launcher's descendants, even when its parent exits or it calls ``setsid``;
- starts the program in a process group of its own, with ``PR_SET_PDEATHSIG`` set to
  SIGKILL (the program dies with the launcher), and writes ``ok PID`` on FD, or
  ``error ERRNO MESSAGE`` when the program cannot be executed (then exits with 127);
- passes SIGTERM, SIGINT and SIGHUP on to the program's process group;
- kills every descendant (SIGKILL, found in ``/proc``, again until none is left) when the
  program exits, when the serving process asks (a byte on FD), or when the serving process
  is gone (FD reads end of file: the kernel closes it whatever killed the process, SIGKILL
  included);
- then exits as the program did: with its exit code, or killed by its signal.

It imports only the standard library and runs without ``site``, so it starts in about
10 ms. What it cannot cover: the launcher itself SIGKILLed by someone else (the program
still dies with it, its descendants are left to the serving process's group kill), and a
descendant that escapes the process tree by other means (a double fork through a daemon
manager, a container runtime).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import select
import signal
import sys
import time
from os import _exit as exit_now  # at once, without the interpreter's cleanup (the child after fork)

__all__ = ["PR_SET_CHILD_SUBREAPER", "PR_SET_PDEATHSIG", "prctl"]

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
_FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_ROUNDS = 500  # kill-and-reap passes at most (a fork bomb gets this many, then the launcher exits)


def prctl(option: int, value: int) -> None:
    """``prctl(2)`` with one argument (OSError when it fails, AttributeError off Linux)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(option, value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl failed")


def _descendants(root: int) -> list[int]:
    """Every process below ``root``, from the parent pids in ``/proc``."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue  # it just ended
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
        ppid = int(stat[stat.rfind(b")") + 2 :].split()[1])
        children.setdefault(ppid, []).append(int(name))
    found: list[int] = []
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


class Guard:
    def __init__(self, fd: int, command: list[str]) -> None:
        self.fd = fd
        self.command = command
        self.program = 0
        self.status: int | None = None
        """The program's wait status once it was reaped."""

    def reap(self) -> bool:
        """Reap every child that ended; False once there is no child left."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return False
            if pid == 0:
                return True
            if pid == self.program:
                self.status = status

    def kill_all(self) -> None:
        """SIGKILL every descendant, reap, and again, until none is left."""
        me = os.getpid()
        for _ in range(_ROUNDS):
            try:
                found = _descendants(me)
            except OSError:  # no /proc: the program's group is what can be found
                found = []
                with contextlib.suppress(OSError):
                    os.killpg(self.program, signal.SIGKILL)
            for pid in found:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            if not self.reap() and not found:
                return
            time.sleep(0.002)

    def start(self) -> None:
        """Fork and execute the program; tell the serving process how that went."""
        err_r, err_w = os.pipe()  # closed on exec: end of file means it ran
        guard = os.getpid()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child, between fork and exec
            try:
                for sig in (*_FORWARDED, signal.SIGCHLD, signal.SIGPIPE, signal.SIGXFSZ):
                    signal.signal(sig, signal.SIG_DFL)
                signal.set_wakeup_fd(-1)
                os.setpgid(0, 0)
                prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
                if os.getppid() != guard:  # the launcher died before the line above
                    exit_now(127)
                os.execvp(self.command[0], self.command)
            except OSError as exc:
                os.write(err_w, f"{exc.errno or 0} {exc.strerror or exc}".encode())
            finally:
                exit_now(127)
        self.program = pid
        with contextlib.suppress(OSError):  # as the child does: whichever runs first
            os.setpgid(pid, pid)
        os.close(err_w)
        failure = os.read(err_r, 1024)
        os.close(err_r)
        if failure:
            self.tell(b"error " + failure)
            self.kill_all()
            exit_now(127)
        self.tell(b"ok %d" % pid)

    def tell(self, line: bytes) -> None:
        with contextlib.suppress(OSError):
            os.write(self.fd, line + b"\n")

    def run(self) -> None:
        """Wait for the program's exit, a request to stop it or the serving process's end."""
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_w, False)
        signal.set_wakeup_fd(wake_w)
        for sig in (*_FORWARDED, signal.SIGCHLD):
            signal.signal(sig, lambda *_: None)  # the number arrives on wake_r
        self.start()
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)  # the pipes stay the program's alone: end of file when it ends
        os.dup2(null, 1)
        os.close(null)
        while self.status is None:
            ready, _, _ = select.select([self.fd, wake_r], [], [])
            if wake_r in ready:
                for signum in os.read(wake_r, 256):
                    if signum in _FORWARDED:
                        with contextlib.suppress(OSError):
                            os.killpg(self.program, signum)
                self.reap()
            if self.fd in ready and self.status is None:
                break  # a request to stop it (a byte), or the serving process is gone (end of file)
        self.kill_all()
        self.exit()

    def exit(self) -> None:
        """Exit as the program did."""
        code = 128 + signal.SIGKILL if self.status is None else os.waitstatus_to_exitcode(self.status)
        if code >= 0:
            exit_now(code)
        sig = -code
        with contextlib.suppress(OSError, ValueError):
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # the program's crash, not a core of ours
        with contextlib.suppress(OSError, ValueError):
            signal.set_wakeup_fd(-1)
            if sig not in (signal.SIGKILL, signal.SIGSTOP):
                signal.signal(sig, signal.SIG_DFL)
        with contextlib.suppress(OSError):
            os.kill(os.getpid(), sig)
        exit_now(128 + sig)  # a signal whose default is not to end a process


def main(argv: list[str]) -> None:
    if len(argv) < 3 or argv[1] != "--":
        sys.stderr.write("usage: _guard.py FD -- COMMAND [ARGS...]\n")
        exit_now(2)
    fd = int(argv[0])
    os.set_inheritable(fd, False)  # the program must not hold the serving process's line
    with contextlib.suppress(OSError):
        prctl(PR_SET_CHILD_SUBREAPER, 1)
    Guard(fd, argv[2:]).run()


if __name__ == "__main__":
    main(sys.argv[1:])
