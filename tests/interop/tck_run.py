"""Run the official A2A TCK against the gateway's origin and against a2a-sdk's own server.

The TCK (``a2aproject/a2a-tck``) is not published on a package index, so this takes a
checkout of it (``--tck DIR``) and installs its requirements into a venv of its own
(``<repo>/.tck-venv`` by default; built once, under a file lock, like the SDK venv).
Both targets serve the same agent, ``--agent``:

- ``paced`` (the default): the TCK's reference agent (``python-sut/`` of the TCK), whose
  task reports working after 0.5 s and completes with its answer after about 1.2 s, and
  can be cancelled meanwhile (``tck_agents.py`` on the bus, ``sdk/paced_server.py`` for
  a2a-sdk, both on ``sdk/paced.py``'s schedule);
- ``echo``: answers at once with its input.

Then, for each target:

- ``gateway``: nats-server and Redis on free ports, a runtime serving the agent, and a
  gateway with it as ``--default-agent`` and push URLs to private addresses allowed (the
  TCK's webhook listens on ``localhost``);
- ``sdk``: ``tests/interop/sdk/echo_server.py --push`` (or ``paced_server.py --push``)
  under the a2a-sdk 1.3 venv,

it runs the TCK's categories (``mandatory``: ``tests/mandatory/`` marked ``mandatory or
mandatory_protocol or mandatory_jsonrpc``; ``capabilities``: ``tests/optional/capabilities/``),
the selections ``run_tck.py --category C`` makes for the JSON-RPC transport, with the
plugin ``tests/interop/tck/tck_a2a_version.py`` so that every request says
``A2A-Version: 1.0``. Both targets' cards name ``localhost``, not ``127.0.0.1`` (the TCK
counts loopback IP addresses in a card as leaked internal URLs). It prints each
category's counts and failing tests, and with ``--json FILE`` writes them there.

``--return-immediately`` adds the plugin ``tck/tck_return_immediately.py``: a
``SendMessage`` that does not say whether to wait returns at once, so that the TCK's
``ListTasks``, continuation and cancel tests, written for a send that returns while the
task runs, get a running task (a send without it waits for the task's end, as A2A 1.0
says).

The gateway resolves a push URL's host when a configuration is created, and the TCK's
configurations name ``https://example.com/webhook``: on a machine without DNS,
``--resolve example.com=192.0.2.1`` has the gateway's push-URL guard take that address for
that host (other hosts are resolved as usual).

    python tests/interop/tck_run.py --tck ../a2a-tck [--target gateway|sdk|both] [--agent paced|echo]
        [--return-immediately] [--resolve HOST=IP]
"""

from __future__ import annotations

import argparse
import fcntl
import ipaddress
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from a2a import Runtime, Settings  # noqa: E402
from a2a.dev.sdk_env import ensure_sdk_python  # noqa: E402
from a2a.dev.servers import NatsServer, RedisServer, free_port  # noqa: E402
from a2a.gateway import Authenticator, GatewayConfig, push_guard, serve_gateway  # noqa: E402
from tests.gateway import agents  # noqa: E402
from tests.interop.conftest import ECHO_SERVER, SDK_DIR, start_sdk_server, stop_sdk_server  # noqa: E402
from tests.interop.tck_agents import paced  # noqa: E402

PLUGIN_DIR = Path(__file__).resolve().parent / "tck"
CATEGORIES = {
    "mandatory": ("tests/mandatory/", "mandatory or mandatory_protocol or mandatory_jsonrpc"),
    "capabilities": ("tests/optional/capabilities/", None),
}
Results = dict[str, dict[str, Any]]
AGENTS = {"echo": (agents.echo, ECHO_SERVER), "paced": (paced, SDK_DIR / "paced_server.py")}
"""Each ``--agent``: the bus agent behind the gateway, and the a2a-sdk server script."""


def ensure_tck_python(tck: Path, venv: Path) -> Path:
    """The python of a venv holding the requirements of the TCK checkout ``tck``."""
    python = venv / "bin" / "python"
    marker = venv / "tck-source.txt"
    wanted = str(tck.resolve())
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.with_name(venv.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if python.is_file() and marker.is_file() and marker.read_text().strip() == wanted:
            return python
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        # The package's own dependencies (pytest, pytest-json-report, requests, httpx, ...);
        # its tests run from the checkout.
        subprocess.run([str(python), "-m", "pip", "install", "-q", wanted], check=True)
        marker.write_text(wanted + "\n")  # last: a half-built venv is never reused
    return python


@dataclass(frozen=True)
class Tck:
    """What to run: a TCK checkout, the python of its venv, the categories and our plugins."""

    python: Path
    checkout: Path
    categories: tuple[str, ...]
    plugins: tuple[str, ...] = ("tck_a2a_version",)

    def run(self, url: str) -> dict[str, Any]:
        """Each category against ``url``."""
        with tempfile.TemporaryDirectory(prefix="a2a-tck-") as tmp:
            return {c: self.run_category(url, c, Path(tmp) / f"{c}.json") for c in self.categories}

    def run_category(self, url: str, category: str, report: Path) -> dict[str, Any]:
        """One TCK category against ``url``: its summary counts and failing test ids."""
        path, markers = CATEGORIES[category]
        argv = [str(self.python), "-m", "pytest", path, f"--sut-url={url}", "--test-scope=all", "--tb=short"]
        argv += ["-q", "-m", markers] if markers else ["-q"]
        argv += ["--transports", "jsonrpc", "-p", "no:cacheprovider"]
        argv += [arg for plugin in self.plugins for arg in ("-p", plugin)]
        argv += ["--json-report", f"--json-report-file={report}"]
        env = {**os.environ, "PYTHONPATH": str(PLUGIN_DIR), "PYTEST_ADDOPTS": ""}
        subprocess.run(
            argv,
            cwd=self.checkout,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )
        data = json.loads(report.read_text())
        failing = sorted(t["nodeid"] for t in data["tests"] if t["outcome"] in ("failed", "error"))
        counts = {k: v for k, v in data["summary"].items() if k not in ("total", "collected", "deselected")}
        return {"counts": counts, "failing": failing}


async def _gateway_run(settings: Settings, agent: str, run: Callable[[str], Any]) -> Any:
    port = free_port()
    url = f"http://localhost:{port}"
    # The TCK is one user, and with --return-immediately its ListTasks tests start 60
    # tasks within a second or so: more than the 64 running per user allowed by default.
    config = GatewayConfig(
        default_agent=agent,
        default_timeout=30,
        public_url=url,
        push_allow_private=True,
        max_running_per_user=1000,
    )
    async with Runtime(settings) as runtime, anyio.create_task_group() as tg:
        await runtime.serve(AGENTS[agent][0])
        await runtime.wait_for_agents([agent])
        await tg.start(
            lambda task_status: serve_gateway(
                runtime, port=port, config=config, auth=Authenticator(), task_status=task_status
            )
        )
        result = await anyio.to_thread.run_sync(run, url)
        tg.cancel_scope.cancel()
    return result


def resolve_as(names: dict[str, str]) -> None:
    """Have the gateway's push-URL guard (in this process) take the address ``names`` gives
    for a host it lists, and resolve any other host as before."""
    resolve = push_guard._resolve
    fixed = {host: [ipaddress.ip_address(address)] for host, address in names.items()}

    async def resolve_fixed(host: str, port: int) -> list[push_guard.Address]:
        return fixed[host] if host in fixed else await resolve(host, port)

    push_guard._resolve = resolve_fixed


def run_gateway(tck: Tck, names: dict[str, str], agent: str) -> dict[str, Any]:
    """The TCK against a gateway origin over real nats-server and Redis, ``agent`` its
    default agent; its push-URL guard takes ``names``' addresses for their hosts."""
    if names:
        resolve_as(names)
    with NatsServer() as nats, RedisServer() as redis:
        settings = Settings(nats_url=nats.url, redis_url=redis.url, namespace="tck")
        return anyio.run(_gateway_run, settings, agent, tck.run)


def run_sdk(tck: Tck, agent: str) -> dict[str, Any]:
    """The TCK against a2a-sdk's server with ``agent``'s executor and push notifications."""
    server = start_sdk_server(ensure_sdk_python(), AGENTS[agent][1], "--host", "localhost", "--push")
    try:
        return tck.run(f"http://localhost:{server.port}")
    finally:
        stop_sdk_server(server.proc)
        server.log_path.unlink(missing_ok=True)


def report(results: Results, title: str) -> str:
    lines = [title]
    for target, by_category in results.items():
        for category, result in by_category.items():
            counts = ", ".join(f"{n} {k}" for k, n in sorted(result["counts"].items()))
            lines.append(f"{target} {category}: {counts}")
            lines += [f"    FAILED {nodeid}" for nodeid in result["failing"]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tck", type=Path, required=True, help="a checkout of a2aproject/a2a-tck")
    p.add_argument("--target", choices=["gateway", "sdk", "both"], default="both")
    p.add_argument(
        "--agent",
        choices=sorted(AGENTS),
        default="paced",
        help="paced: the TCK's reference agent (about 1.2 s a task); echo: answers at once",
    )
    p.add_argument("--categories", default="mandatory,capabilities", help="comma-separated")
    p.add_argument(
        "--return-immediately",
        action="store_true",
        help="SendMessage calls that do not say otherwise return at once (tck/tck_return_immediately.py)",
    )
    p.add_argument("--venv", type=Path, default=REPO / ".tck-venv", help="the TCK's venv")
    p.add_argument("--json", type=Path, help="write the results here too")
    p.add_argument(
        "--resolve",
        action="append",
        default=[],
        metavar="HOST=IP",
        help="the gateway takes IP for push URLs naming HOST (for example.com without DNS); repeatable",
    )
    args = p.parse_args(argv)
    names: dict[str, str] = {}
    for item in args.resolve:
        host, _, address = item.partition("=")
        try:
            ipaddress.ip_address(address)
        except ValueError:
            p.error(f"--resolve takes HOST=IP, not {item!r}")
        names[host] = address
    categories = [c for c in args.categories.split(",") if c]
    if not set(categories) <= set(CATEGORIES) or not categories:
        p.error(f"--categories takes {', '.join(CATEGORIES)}")
    if not (args.tck / "tests" / "mandatory").is_dir():
        p.error(f"{args.tck} is not a checkout of the A2A TCK (no tests/mandatory/)")
    plugins = ("tck_a2a_version",) + (("tck_return_immediately",) if args.return_immediately else ())
    tck = Tck(ensure_tck_python(args.tck, args.venv), args.tck.resolve(), tuple(categories), plugins)
    results: Results = {}
    if args.target in ("gateway", "both"):
        results["gateway"] = run_gateway(tck, names, args.agent)
    if args.target in ("sdk", "both"):
        results["a2a-sdk"] = run_sdk(tck, args.agent)
    sends = "return at once" if args.return_immediately else "as the TCK makes them"
    print(report(results, f"agent {args.agent}, sends {sends}"))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
