"""The health endpoint Kubernetes probes use, on a real agent process."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from a2a import Settings
from a2a.dev.servers import RedisServer, free_port
from tests.helpers import AgentProcess, wait_until

pytestmark = pytest.mark.integration


def get(port: int, path: str) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_liveness_follows_the_heartbeat_loop_and_readiness_the_registry(
    nats_url: str, namespace: str
) -> None:
    with RedisServer() as redis:
        settings = Settings(
            nats_url=nats_url, redis_url=redis.url, namespace=namespace, heartbeat_interval=0.2
        )
        port = free_port()
        with AgentProcess(settings, "tests.agents:echo", A2A_HEALTH_PORT=str(port)):
            wait_until(lambda: _status(port, "/readyz") == 200, timeout=20)
            assert get(port, "/livez") == (200, {"live": True})
            status, report = get(port, "/healthz")
            assert status == 200 and report["nats"] is True and set(report["agents"]) == {"echo"}
            assert report["registry"]["lastHeartbeatSeconds"] < 0.6
            assert get(port, "/nope")[0] == 404
            redis.stop()  # the registry goes away: not ready, still alive
            wait_until(lambda: _status(port, "/readyz") == 503, timeout=5)
            assert get(port, "/livez")[0] == 200
            redis.restart()
            wait_until(lambda: _status(port, "/readyz") == 200, timeout=10)


def _status(port: int, path: str) -> int | None:
    try:
        return get(port, path)[0]
    except (OSError, ValueError):
        return None
