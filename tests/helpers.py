"""Helpers for tests that run agents as separate OS processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from types import TracebackType
from typing import Any

import anyio

from a2a import Settings
from a2a.dev.servers import die_with_parent
from transports import Transport

ROOT = Path(__file__).resolve().parent.parent


def agent_env(settings: Settings, **extra: str) -> dict[str, str]:
    env = {
        **os.environ,
        "NATS_URL": settings.nats_url,
        "REDIS_URL": settings.redis_url or "",
        "A2A_NAMESPACE": settings.namespace,
        "A2A_HEARTBEAT_INTERVAL": str(settings.heartbeat_interval),
        "A2A_OPEN": "1" if settings.open else "0",
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    env.update(extra)
    return env


class AgentProcess:
    """``python -m a2a serve <targets>`` in a child process."""

    def __init__(self, settings: Settings, *targets: str, **env: str) -> None:
        self.targets = targets
        self.env = agent_env(settings, **env)
        self.log = Path(tempfile.mkstemp(prefix="a2a-agent-", suffix=".log")[1])
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> AgentProcess:
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "a2a", "serve", *self.targets],
                env=self.env,
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=die_with_parent,
            )
        return self

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def kill(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def terminate(self, timeout: float = 10) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.terminate()
        return self.proc.wait(timeout)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def __enter__(self) -> AgentProcess:
        return self.start()

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.log.unlink(missing_ok=True)


def wait_until(predicate: object, timeout: float = 10.0, interval: float = 0.02) -> float:
    """Poll ``predicate()`` until true; returns the seconds it took."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if predicate():  # type: ignore[operator]
            return time.monotonic() - start
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s")


async def raw_exchange(
    transport: Transport, subject: str, data: bytes, timeout: float = 5.0
) -> dict[str, Any]:
    """Publish bytes with a reply inbox, as a plain NATS client would; return the reply as JSON."""
    return json.loads(await raw_reply(transport, subject, data, timeout))  # type: ignore[no-any-return]


async def raw_reply(transport: Transport, subject: str, data: bytes, timeout: float = 5.0) -> bytes:
    """Publish bytes with a reply inbox, as a plain NATS client would; return the reply's bytes."""
    got: list[bytes] = []
    done = anyio.Event()

    async def on_reply(msg: Any) -> None:
        got.append(msg.data)
        done.set()

    inbox = f"_INBOX.t{uuid.uuid4().hex}"
    sub = await transport.subscribe(inbox, on_reply)
    await transport.flush()
    await transport.publish(subject, data, reply=inbox)
    with anyio.fail_after(timeout):
        await done.wait()
    await sub.unsubscribe()
    return got[0]
