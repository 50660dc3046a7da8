"""``a2a up``: a dev cluster (nats-server and a Redis-compatible server) for every terminal.

The servers' URLs go to the dev cluster file (:func:`a2a.core.settings.dev_cluster_file`),
which every other ``a2a`` command, in any terminal, reads where its environment names no
NATS server; the file goes when ``a2a up`` stops.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from typing import TYPE_CHECKING, Any

from .common import CommandError

if TYPE_CHECKING:
    from ..dev.servers import ServerProcess

__all__ = ["OPEN_CLUSTER", "check_server_environment", "cmd_up"]

OPEN_CLUSTER = (
    "# open dev cluster: no credentials, so any process that reaches these servers may call any"
    " agent as anyone (docs: operations/security.md)"
)


_OPEN_NOTE = "  # development: without a roster, agents may call each other"


def check_server_environment() -> None:
    """NATS_URL and REDIS_URL, when set, must be URLs the runtime can use."""
    from ..core.settings import check_nats_url, check_redis_url

    for var, check in (("NATS_URL", check_nats_url), ("REDIS_URL", check_redis_url)):
        value = os.environ.get(var)
        if value:
            try:
                check(value)
            except ValueError as exc:
                raise ValueError(f"invalid {var}: {exc}") from None


def _stop(signum: int, frame: Any) -> None:
    sys.exit(0)  # leaves through the finally below: servers stopped, file removed


def cmd_up(args: argparse.Namespace) -> int:
    from ..core.settings import dev_cluster_file, read_dev_cluster
    from ..dev.cluster_file import remove_dev_cluster, write_dev_cluster
    from ..dev.servers import NatsServer, RedisServer
    from .common import err_console

    check_server_environment()
    path = dev_cluster_file()
    found = read_dev_cluster()  # ValueError (exit 2) for a file that is not one
    if found is not None and found.running:
        urls = " ".join(f"{k}={v}" for k, v in found.values.items() if k != "A2A_OPEN")
        raise CommandError(
            f"a dev cluster already runs (a2a up, pid {found.pid}; {path}): {urls}. Every a2a command"
            " uses it; stop it (Ctrl-C in its terminal) to start another"
        )
    if found is not None:
        sys.stderr.write(f"a2a up: replacing {path}: the a2a up that wrote it (pid {found.pid}) is gone\n")
    started: list[ServerProcess] = []
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGHUP, _stop)  # the terminal closed
    try:
        nats_url = os.environ.get("NATS_URL")
        if not nats_url:
            nats = NatsServer(args.nats_port).start()
            started.append(nats)
            nats_url = nats.url
        redis_url = os.environ.get("REDIS_URL")
        if not redis_url:
            redis = RedisServer(args.redis_port).start()
            started.append(redis)
            redis_url = redis.url
        values = {"NATS_URL": nats_url, "REDIS_URL": redis_url, "A2A_OPEN": "1"}
        for name, value in values.items():
            note = (
                "  # development: without a roster, agents may call each other" if name == "A2A_OPEN" else ""
            )
            print(f"export {name}={value}{note}", flush=True)
        if not started:
            print("# NATS_URL and REDIS_URL point at running servers; nothing to start")
            return 0
        write_dev_cluster(path, values)
        # Plain lines, never wrapped: a shell may read them, and the file's path must stay whole.
        print(
            f"# in {path} too: every a2a command, in any terminal, uses these servers (unless told otherwise)"
        )
        print("# Ctrl-C stops them", OPEN_CLUSTER, sep="\n", flush=True)
        while all(s.running for s in started):
            time.sleep(0.5)
        err_console.print("a server exited unexpectedly:", *(s.log_tail() for s in started if not s.running))
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        remove_dev_cluster(path)
        for server in started:
            server.cleanup()
