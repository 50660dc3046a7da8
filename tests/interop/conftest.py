"""Interop fixtures: programs built on the public ``a2a-sdk``, run in a venv of their own.

The SDK's top-level ``a2a`` package clashes with ours, so ``tests/interop/sdk/*.py`` run
only under the interpreter of :func:`a2a.dev.sdk_env.ensure_sdk_python` (started with
``-E -s`` so no PYTHONPATH or user site can bring our ``a2a`` back), and pytest never
collects or imports them.

Typical use::

    def test_x(sdk_python, sdk_echo_server):
        url = sdk_echo_server(delay=0.5, skills=["a", "b"])
        out = run_sdk_client(sdk_python, "--url", url, "--binding", "rest", "send", "hi")
        assert out.returncode == 0 and out.last("task")["status"]["state"] == "TASK_STATE_COMPLETED"

Two more clients run the same way: Google ADK's ``RemoteA2aAgent`` (``adk/*.py``, under
the interpreter of :func:`a2a.dev.sdk_env.ensure_adk_python`) and the official JavaScript
SDK (``js/*.mjs`` with node, in the copy of ``js/`` that
:func:`a2a.dev.node_env.ensure_node_project` installs with ``npm ci``).

Set ``A2A_SKIP_INTEROP=1`` to skip these tests; otherwise an environment that cannot be
built (a registry out of reach included) is an error. ``A2A_SDK_VENV``, ``A2A_ADK_VENV``
and ``A2A_NODE_PROJECTS`` move the environments (default ``<repo>/.sdk-venv``,
``<repo>/.adk-venv`` and ``<repo>/.node-projects``).
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from a2a import Agent, Runtime, Settings
from a2a.dev.node_env import ensure_node_project
from a2a.dev.sdk_env import ensure_adk_python, ensure_sdk_python
from a2a.dev.servers import die_with_parent
from a2a.gateway import Authenticator, GatewayConfig, serve_gateway

collect_ignore = ["sdk", "adk", "js", "tck", "tck_run.py"]

SDK_DIR = Path(__file__).resolve().parent / "sdk"
ADK_DIR = Path(__file__).resolve().parent / "adk"
JS_DIR = Path(__file__).resolve().parent / "js"
ECHO_SERVER = SDK_DIR / "echo_server.py"
CLIENT = SDK_DIR / "client.py"
READY_TIMEOUT = 30.0


class SdkOutput(list[dict[str, Any]]):
    """The JSON lines a client run printed, with its exit code and stderr."""

    def __init__(self, lines: list[dict[str, Any]], returncode: int, stderr: str) -> None:
        super().__init__(lines)
        self.returncode = returncode
        self.stderr = stderr

    def events(self, event: str | None = None, op: str | None = None) -> list[dict[str, Any]]:
        """Lines with this ``event`` (task, status-update, ...) and/or this ``op``."""
        return [
            line
            for line in self
            if (event is None or line.get("event") == event) and (op is None or line.get("op") == op)
        ]

    def last(self, event: str = "task", op: str | None = None) -> dict[str, Any]:
        found = self.events(event, op)
        assert found, f"no {event!r} line (op={op}) in {list(self)}\nstderr:\n{self.stderr}"
        return found[-1]

    @property
    def error(self) -> dict[str, Any] | None:
        """The ``error`` object of a failed run, else None."""
        return next((line["error"] for line in self if "error" in line and "op" not in line), None)

    def ok(self) -> SdkOutput:
        """Itself, after asserting the run succeeded."""
        assert self.returncode == 0, f"exit {self.returncode}: {list(self)}\nstderr:\n{self.stderr}"
        return self


def _argv(python: Path, script: Path, *args: str) -> list[str]:
    return [str(python), "-E", "-s", str(script), *args]


def run_json_lines(argv: list[str], cwd: Path, timeout: float = 30) -> SdkOutput:
    """Run a client program that prints one JSON object a line; its parsed lines and exit code."""
    proc = subprocess.run(
        argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, cwd=cwd
    )
    lines = []
    for raw in proc.stdout.splitlines():
        try:
            lines.append(json.loads(raw))
        except json.JSONDecodeError:
            raise AssertionError(f"client printed a non-JSON line {raw!r}\nstderr:\n{proc.stderr}") from None
    return SdkOutput(lines, proc.returncode, proc.stderr)


def run_sdk_client(sdk_python: Path, *args: str, timeout: float = 30) -> SdkOutput:
    """Run ``tests/interop/sdk/client.py`` with ``args``; its parsed stdout lines and exit code."""
    return run_json_lines(_argv(sdk_python, CLIENT, *args), SDK_DIR, timeout)


def _options(options: dict[str, Any]) -> list[str]:
    """``delay=1, streaming=False, skills=["a", "b"]`` -> ``--delay 1 --no-streaming --skills a,b``."""
    argv: list[str] = []
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if value is None:
            continue
        if value is True:
            argv.append(flag)
        elif value is False:
            argv.append("--no-" + key.replace("_", "-"))
        elif isinstance(value, list | tuple):
            argv += [flag, ",".join(str(v) for v in value)]
        else:
            argv += [flag, str(value)]
    return argv


class SdkServer(str):
    """The base URL of a running SDK server (``http://127.0.0.1:<port>``)."""

    port: int
    proc: subprocess.Popen[str]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def start_sdk_server(sdk_python: Path, script: Path, *args: str, timeout: float = READY_TIMEOUT) -> SdkServer:
    """Start an SDK server script in its own process group; return once it printed ``READY <port>``."""
    log_path = Path(tempfile.mkstemp(prefix=f"a2a-{script.stem}-", suffix=".log")[1])
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            _argv(sdk_python, script, "--port", "0", *args),
            stdout=subprocess.PIPE,
            stderr=log,
            stdin=subprocess.DEVNULL,
            text=True,
            cwd=SDK_DIR,
            start_new_session=True,
            preexec_fn=die_with_parent,
        )
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    line = ""
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        while not line and time.monotonic() < deadline and proc.poll() is None:
            if sel.select(timeout=0.1):
                line = proc.stdout.readline()
    if not line.startswith("READY "):
        stop_sdk_server(proc)
        raise RuntimeError(
            f"{script.name} {' '.join(args)} did not print READY within {timeout}s "
            f"(exit {proc.returncode}, stdout {line!r}):\n{log_path.read_text(errors='replace')}"
        )
    port = int(line.split()[1])
    server = SdkServer(f"http://127.0.0.1:{port}")
    server.port, server.proc, server.log_path = port, proc, log_path
    return server


def stop_sdk_server(proc: subprocess.Popen[str]) -> None:
    """SIGTERM the server's process group, SIGKILL it after 3 s."""
    for sig, wait in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(wait)
            break
        except subprocess.TimeoutExpired:
            continue
    if proc.stdout is not None:
        proc.stdout.close()


@pytest.fixture(scope="session")
def sdk_python() -> Path:
    """The python of the a2a-sdk venv (built on first use, about half a minute)."""
    if os.environ.get("A2A_SKIP_INTEROP") == "1":
        pytest.skip("A2A_SKIP_INTEROP=1: a2a-sdk interop tests are disabled")
    return ensure_sdk_python()


@pytest.fixture(scope="module")
def sdk_echo_server(sdk_python: Path) -> Iterator[Callable[..., SdkServer]]:
    """Factory: ``sdk_echo_server(**options) -> base_url`` runs ``sdk/echo_server.py``.

    Options are its command-line flags in Python form (``delay=2``, ``cancel_log=path``,
    ``fail="boom"``, ``skills=["a", "b"]``, ``streaming=False``, ``versions=["1.0"]``,
    ``bindings=["rest"]``, ``require_header="X-Api-Key: k"``, ``echo_headers=[...]``,
    ``name="x"``). Servers live until the end of the test module; calls with the same
    options share one server.
    """
    servers: dict[tuple[str, ...], SdkServer] = {}

    def start(**options: Any) -> SdkServer:
        args = tuple(_options(options))
        if args not in servers or servers[args].proc.poll() is not None:
            servers[args] = start_sdk_server(sdk_python, ECHO_SERVER, *args)
        return servers[args]

    try:
        yield start
    finally:
        for server in servers.values():  # all at once: each may take a moment to shut down
            with contextlib.suppress(ProcessLookupError):
                os.killpg(server.proc.pid, signal.SIGTERM)
        for server in servers.values():
            stop_sdk_server(server.proc)
            server.log_path.unlink(missing_ok=True)


@pytest.fixture
def sdk_client(sdk_python: Path) -> Callable[..., SdkOutput]:
    """``sdk_client(*args, timeout=30)``: :func:`run_sdk_client` bound to the SDK venv."""

    def run(*args: str, timeout: float = 30) -> SdkOutput:
        return run_sdk_client(sdk_python, *args, timeout=timeout)

    return run


def _skip_if_disabled() -> None:
    if os.environ.get("A2A_SKIP_INTEROP") == "1":
        pytest.skip("A2A_SKIP_INTEROP=1: interop tests are disabled")


@pytest.fixture(scope="session")
def adk_python() -> Path:
    """The python of the google-adk venv (built on first use, about half a minute)."""
    _skip_if_disabled()
    return ensure_adk_python()


@pytest.fixture(scope="session")
def js_project() -> Path:
    """The installed copy of ``tests/interop/js`` (``npm ci`` on first use, a few seconds)."""
    _skip_if_disabled()
    return ensure_node_project(JS_DIR)


def run_adk(adk_python: Path, script: str, *args: str, timeout: float = 60) -> SdkOutput:
    """Run ``tests/interop/adk/<script>`` under the ADK venv; its parsed stdout lines."""
    return run_json_lines(_argv(adk_python, ADK_DIR / script, *args), ADK_DIR, timeout)


def run_node(project: Path, script: str, *args: str, timeout: float = 60) -> SdkOutput:
    """Run ``<project>/<script>`` with node; its parsed stdout lines."""
    node = shutil.which("node")
    assert node is not None, "node is not on PATH"
    return run_json_lines([node, str(project / script), *args], project, timeout)


@asynccontextmanager
async def origin_gateway(
    settings: Settings, served: tuple[Agent, ...], config: GatewayConfig
) -> AsyncIterator[str]:
    """The origin URL of a gateway over a runtime serving ``served`` on the test servers."""
    async with Runtime(settings) as runtime, anyio.create_task_group() as tg:
        await runtime.serve(*served)
        await runtime.wait_for_agents([a.name for a in served])
        port = await tg.start(
            lambda task_status: serve_gateway(
                runtime, port=0, config=config, auth=Authenticator(), task_status=task_status
            )
        )
        yield f"http://127.0.0.1:{port}"
        tg.cancel_scope.cancel()
