"""The processes a chaos run owns: nats-server (one, or a 3-node JetStream cluster), a Redis
for the registry, and the serving instances of the chaos worker.

Everything is a child process started from the main thread (the kernel SIGKILLs them if
this process dies: :func:`a2a.processes.die_with_parent`), on free ports, with its data in
a temporary directory. Killing is always SIGKILL: nothing gets the chance to flush, hand
back or say goodbye.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from ..dev.servers import NatsServer, ServerError, free_port
from ..processes import die_with_parent
from .chaos_agent import EVENTS_DIR

__all__ = ["CLUSTER_SIZE", "Instances", "NatsServers"]

CLUSTER_SIZE = 3
TARGET = "a2a.bench.chaos_agent:worker"
"""What each instance serves."""


def _monitor(port: int, endpoint: str) -> dict[str, Any] | None:
    """A monitoring endpoint's JSON, or None while the server does not answer."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{endpoint}", timeout=0.5) as response:
            found = json.load(response)
    except (OSError, ValueError, urllib.error.URLError):
        return None
    return found if isinstance(found, dict) else None


class NatsServers:
    """One nats-server with a file store, or ``size`` of them forming a JetStream cluster."""

    def __init__(self, size: int = 1) -> None:
        self.size = size
        self.monitor_ports = [free_port() for _ in range(size)]
        if size == 1:
            self.nodes = [NatsServer(extra_args=["-m", str(self.monitor_ports[0])])]
        else:
            cluster_ports = [free_port() for _ in range(size)]
            routes = [f"nats://127.0.0.1:{port}" for port in cluster_ports]
            self.nodes = [
                NatsServer(
                    server_name=f"chaos-{i + 1}",
                    cluster_name="chaos",
                    cluster_port=cluster_ports[i],
                    routes=routes,
                    extra_args=["-m", str(self.monitor_ports[i])],
                )
                for i in range(size)
            ]

    @property
    def url(self) -> str:
        """Every node's URL, comma-separated: clients move to another when theirs dies."""
        return ",".join(node.url for node in self.nodes)

    def start(self, timeout: float = 30.0) -> None:
        """Start every node and wait until JetStream answers (a cluster: has a meta leader).

        Raises:
            ServerError: a node did not start, or JetStream did not become ready in time.
        """
        for node in self.nodes:
            node.start()
        deadline = time.monotonic() + timeout
        while not all(self.jetstream_ready(i) for i in range(self.size)):
            if time.monotonic() > deadline:
                tails = "\n".join(node.log_tail(5) for node in self.nodes)
                raise ServerError(f"JetStream did not become ready within {timeout:g}s:\n{tails}")
            time.sleep(0.05)

    def jetstream_ready(self, index: int) -> bool:
        """Node ``index`` answers for JetStream (in a cluster: it knows the meta leader)."""
        jsz = _monitor(self.monitor_ports[index], "/jsz")
        if jsz is None:
            return False
        if self.size == 1:
            return True
        return bool((jsz.get("meta_cluster") or {}).get("leader"))

    def node_named(self, name: str) -> int:
        """The index of the node whose server name is ``name``.

        Raises:
            LookupError: no node has that name.
        """
        for i, node in enumerate(self.nodes):
            if node.server_name == name:
                return i
        raise LookupError(f"no node is named {name!r}")

    def kill(self, index: int = 0) -> None:
        """SIGKILL node ``index`` (its store directory stays)."""
        self.nodes[index].kill()

    def restart(self, index: int = 0) -> None:
        """Start node ``index`` again on the same ports and store directory; returns once it
        accepts connections (JetStream may need longer: :meth:`jetstream_ready`).

        Raises:
            ServerError: it did not start.
        """
        self.nodes[index].restart()

    def stop(self) -> None:
        for node in self.nodes:
            node.cleanup()


class Instances:
    """``count`` processes of ``a2a serve a2a.bench.chaos_agent:worker`` on the given servers."""

    def __init__(self, count: int, folder: Path, env: dict[str, str]) -> None:
        self.folder = folder
        self.env = {**os.environ, **env, EVENTS_DIR: str(folder)}
        self.procs: list[subprocess.Popen[bytes] | None] = [None] * count
        self.logs: list[Path | None] = [None] * count
        self.started = 0
        """Processes started so far (the first ones and every restart)."""

    def start(self, index: int) -> None:
        """Start instance ``index`` (from the main thread: see :func:`die_with_parent`)."""
        self.started += 1
        path = self.folder / f"instance-{index}.{self.started}.log"  # one log per process
        with open(path, "ab") as log:
            self.procs[index] = subprocess.Popen(
                [sys.executable, "-m", "a2a", "serve", TARGET],
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=die_with_parent,
            )
        self.logs[index] = path

    def start_all(self) -> None:
        for index in range(len(self.procs)):
            self.start(index)

    def serving(self) -> int:
        """How many instances serve now (``a2a serve`` logs a line once it does)."""
        return sum(
            1
            for index, proc in enumerate(self.procs)
            if proc is not None and proc.poll() is None and "serving chaos-worker" in self.log_tail(index, 0)
        )

    def wait_serving(self, timeout: float) -> None:
        """Wait until every instance serves.

        Raises:
            ServerError: one exited or did not serve in time (with its log's end).
        """
        deadline = time.monotonic() + timeout
        while self.serving() < len(self.procs):
            for index, proc in enumerate(self.procs):
                if proc is not None and proc.poll() is not None:
                    raise ServerError(f"instance {index} exited: {self.log_tail(index)}")
            if time.monotonic() > deadline:
                raise ServerError(f"the instances did not all serve within {timeout:g}s")
            time.sleep(0.05)

    def kill(self, index: int) -> None:
        """SIGKILL instance ``index`` and reap it."""
        proc = self.procs[index]
        if proc is not None and proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
        self.procs[index] = None

    def alive(self) -> int:
        return sum(1 for proc in self.procs if proc is not None and proc.poll() is None)

    def restart_dead(self) -> None:
        """Start every instance that is not running (killed, or exited by itself)."""
        for index, proc in enumerate(self.procs):
            if proc is None or proc.poll() is not None:
                self.start(index)

    def log_tail(self, index: int, lines: int = 15) -> str:
        """The last ``lines`` lines of the log of instance ``index``'s current process (0: all)."""
        path = self.logs[index]
        try:
            text = path.read_text(errors="replace") if path is not None else ""
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:]) if lines else text

    def stop(self) -> None:
        for index in range(len(self.procs)):
            self.kill(index)
