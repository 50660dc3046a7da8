"""A real Redis Cluster for the tests of this directory: 3 masters and 3 replicas on loopback ports.

Six ``redis-server --cluster-enabled yes`` children (``a2a.dev.servers.RedisServer``: no
persistence, own directory, killed with this process), joined by ``redis-cli --cluster
create`` or, without redis-cli, by CLUSTER ADDSLOTSRANGE / MEET / REPLICATE. A node
timeout of one second makes a failover take about two. One cluster serves the whole test
session; a test that kills a master restarts it (as a replica) before it ends.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import redis
import redis.asyncio as aioredis
from redis.crc import key_slot

from a2a.dev.servers import RedisServer, ServerError, free_port
from discovery import Registry
from discovery.cluster import namespace_client

NODE_TIMEOUT_MS = 1000
SLOTS = 16384
CLIENT_OPTIONS: dict[str, Any] = {
    "decode_responses": True,
    "socket_connect_timeout": 2.0,
    "socket_timeout": 5.0,
}
"""What ``Registry.from_url`` gives its client (besides the health check interval)."""


DEPLOY_CONF = Path(__file__).resolve().parents[2] / "deploy" / "redis" / "cluster.conf"


class ClusterNode(RedisServer):
    """One redis-server of the cluster, with its cluster bus on a free port of its own."""

    def __init__(self, node_timeout_ms: int) -> None:
        self.bus_port = free_port()
        super().__init__(
            extra_args=[
                "--cluster-enabled", "yes",
                "--cluster-config-file", "nodes.conf",
                "--cluster-node-timeout", str(node_timeout_ms),
                "--cluster-port", str(self.bus_port),
                "--cluster-replica-validity-factor", "0",
                "--repl-diskless-sync-delay", "0",
            ]
        )  # fmt: skip

    def argv(self) -> list[str]:
        """The deployment's node configuration (deploy/redis/cluster.conf) first, then this node's."""
        binary, *rest = super().argv()
        return [binary, str(DEPLOY_CONF), *rest]

    def client(self, timeout: float = 1.0) -> redis.Redis:
        return redis.Redis(
            host=self.host,
            port=self.port,
            decode_responses=True,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
        )

    def ask(self, *command: Any) -> Any:
        """One command on this node (a fresh connection: nodes come and go)."""
        with self.client() as client:
            return client.execute_command(*command)

    def info(self, section: str) -> dict[str, Any]:
        with self.client() as client:
            return dict(client.info(section))

    @property
    def address(self) -> tuple[str, int]:
        return self.host, self.port


@dataclass
class Failover:
    old: ClusterNode
    new: ClusterNode
    seconds: float
    """From the kill until every live node answered the slot's new master and cluster_state:ok."""


class RedisCluster:
    """Six nodes, three of them masters with one replica each."""

    def __init__(self, *, masters: int = 3, node_timeout_ms: int = NODE_TIMEOUT_MS) -> None:
        self.masters = masters
        self.nodes = [ClusterNode(node_timeout_ms) for _ in range(2 * masters)]

    @property
    def url(self) -> str:
        """``redis+cluster://`` naming every node as a seed."""
        return cluster_url(n.address for n in self.nodes)

    def start(self, *, by_hand: bool = False) -> RedisCluster:
        for node in self.nodes:
            node.start()
        if by_hand or shutil.which("redis-cli") is None:
            self._create_by_hand()
        else:
            self._create_with_cli()
        self.wait_healthy()
        return self

    def stop(self) -> None:
        for node in self.nodes:
            node.cleanup()

    # -- building it -------------------------------------------------------------------

    def _create_with_cli(self) -> None:
        argv = ["redis-cli", "--cluster", "create", *(f"{n.host}:{n.port}" for n in self.nodes)]
        argv += ["--cluster-replicas", "1", "--cluster-yes"]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            raise ServerError(f"redis-cli --cluster create failed: {done.stdout}{done.stderr}")

    def _create_by_hand(self) -> None:
        masters, replicas = self.nodes[: self.masters], self.nodes[self.masters :]
        step = SLOTS // self.masters
        for i, node in enumerate(masters):
            last = SLOTS - 1 if i == self.masters - 1 else (i + 1) * step - 1
            node.ask("CLUSTER", "ADDSLOTSRANGE", i * step, last)
        for i, node in enumerate(self.nodes):
            node.ask("CLUSTER", "SET-CONFIG-EPOCH", i + 1)
        for node in self.nodes[1:]:
            self.nodes[0].ask("CLUSTER", "MEET", node.host, node.port, node.bus_port)
        self._wait(lambda: all(_known_nodes(n) == len(self.nodes) for n in self.nodes), "every node met")
        for master, replica in zip(masters, replicas, strict=True):
            replica.ask("CLUSTER", "REPLICATE", master.ask("CLUSTER", "MYID"))

    # -- watching it -------------------------------------------------------------------

    def live(self) -> list[ClusterNode]:
        return [n for n in self.nodes if n.running]

    def _wait(self, done: Callable[[], bool], what: str, timeout: float = 30.0) -> float:
        start = time.monotonic()
        deadline = start + timeout
        while True:
            try:
                if done():
                    return time.monotonic() - start
            except (redis.RedisError, OSError):
                pass
            if time.monotonic() > deadline:
                raise ServerError(f"redis cluster: {what} not within {timeout}s; {self.describe()}")
            time.sleep(0.02)

    def describe(self) -> str:
        states = []
        for node in self.nodes:
            try:
                states.append(f"{node.port}: {node.ask('CLUSTER', 'INFO').splitlines()[0]}")
            except (redis.RedisError, OSError) as exc:
                states.append(f"{node.port}: {exc}")
        return "; ".join(states)

    def healthy(self) -> bool:
        """cluster_state:ok everywhere, one master per slot range seen alike, replicas in sync."""
        live = self.live()
        if not all("cluster_state:ok" in n.ask("CLUSTER", "INFO") for n in live):
            return False
        views = {_owners(n.ask("CLUSTER", "SLOTS")) for n in live}
        if len(views) != 1:
            return False
        for node in live:
            replication = node.info("replication")
            if replication["role"] == "slave" and replication.get("master_link_status") != "up":
                return False
        return True

    def wait_healthy(self, timeout: float = 30.0) -> float:
        return self._wait(self.healthy, "a healthy cluster", timeout)

    def node_at(self, address: tuple[str, int]) -> ClusterNode:
        return next(n for n in self.nodes if n.address == address)

    def master_of(self, slot: int) -> ClusterNode:
        """The node that the live nodes (all of them alike) name as the slot's master."""
        answers = {_master(n.ask("CLUSTER", "SLOTS"), slot) for n in self.live()}
        if len(answers) != 1:
            raise ServerError(f"nodes disagree on the master of slot {slot}: {answers}")
        return self.node_at(answers.pop())

    def replicas_of(self, master: ClusterNode) -> list[ClusterNode]:
        my_id = master.ask("CLUSTER", "MYID")
        return [
            n
            for n in self.live()
            if n is not master and n.info("replication").get("role") == "slave" and _master_id(n) == my_id
        ]

    # -- failures --------------------------------------------------------------------------

    def kill_master_of(self, namespace: str) -> ClusterNode:
        """SIGKILL the master of the namespace's slot (which must have a replica); returns it."""
        old = self.master_of(slot_of(namespace))
        if not self.replicas_of(old):
            raise ServerError(f"the master of {namespace} has no replica to promote")
        old.kill()
        return old

    def wait_promoted(self, namespace: str, old: ClusterNode, timeout: float = 20.0) -> ClusterNode:
        """Wait until every live node says cluster_state:ok and names one new master for the slot."""
        slot = slot_of(namespace)

        def promoted() -> bool:
            live = self.live()
            if not all("cluster_state:ok" in n.ask("CLUSTER", "INFO") for n in live):
                return False
            answers = {_master(n.ask("CLUSTER", "SLOTS"), slot) for n in live}
            return len(answers) == 1 and old.address not in answers

        self._wait(promoted, f"a new master for slot {slot}", timeout)
        return self.master_of(slot)

    def fail_over(self, namespace: str) -> Failover:
        """Kill the namespace's master and wait for its replica's promotion."""
        started = time.monotonic()
        old = self.kill_master_of(namespace)
        new = self.wait_promoted(namespace, old)
        return Failover(old, new, time.monotonic() - started)

    def rejoin(self, node: ClusterNode, timeout: float = 30.0) -> None:
        """Start a killed node again (from the main thread) and wait until the cluster is healthy.

        It keeps its nodes.conf, so it rejoins as it left: a master that lost its slots to
        its promoted replica becomes that replica's replica.
        """
        node.restart()
        self.wait_healthy(timeout)


def _known_nodes(node: ClusterNode) -> int:
    text = node.ask("CLUSTER", "INFO")
    for line in text.splitlines():
        if line.startswith("cluster_known_nodes:"):
            return int(line.split(":", 1)[1])
    return 0


def _master_id(node: ClusterNode) -> str:
    for line in node.ask("CLUSTER", "NODES").splitlines():
        fields = line.split()
        if "myself" in fields[2]:
            return fields[3]
    return ""


def _owners(slots: Any) -> frozenset[tuple[int, int, str, int]]:
    return frozenset((int(e[0]), int(e[1]), str(e[2][0]), int(e[2][1])) for e in slots)


def _master(slots: Any, slot: int) -> tuple[str, int] | None:
    for entry in slots:
        if int(entry[0]) <= slot <= int(entry[1]):
            return str(entry[2][0]), int(entry[2][1])
    return None


def slot_of(namespace: str) -> int:
    return key_slot(f"{{{namespace}}}".encode())


def namespace_on(cluster: RedisCluster, master: ClusterNode, prefix: str = "n") -> str:
    """A fresh namespace whose slot the node ``master`` serves."""
    ranges = [
        (int(e[0]), int(e[1])) for e in master.ask("CLUSTER", "SLOTS") if tuple(e[2][:2]) == master.address
    ]
    for _ in range(10_000):
        name = f"{prefix}{uuid.uuid4().hex[:10]}"
        if any(start <= slot_of(name) <= end for start, end in ranges):
            return name
    raise AssertionError(f"no namespace found on {master.port}")


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[RedisCluster]:
    cluster = RedisCluster()
    try:
        cluster.start(by_hand=bool(os.environ.get("A2A_TEST_CLUSTER_BY_HAND")))
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
async def client(redis_cluster: RedisCluster, namespace: str) -> AsyncIterator[aioredis.Redis]:
    c = namespace_client(redis_cluster.url, namespace, **CLIENT_OPTIONS)
    yield c
    await c.aclose()


@pytest.fixture
async def registry(redis_cluster: RedisCluster, namespace: str) -> AsyncIterator[Registry]:
    reg = Registry(
        namespace_client(redis_cluster.url, namespace, **CLIENT_OPTIONS),
        namespace=namespace,
        heartbeat_interval=0.2,
    )
    yield reg
    await reg.aclose()


def cluster_url(
    nodes: Iterable[tuple[str, int]], *, tls: bool = False, username: str = "", password: str = ""
) -> str:
    """A cluster URL naming ``nodes`` (and credentials, percent-encoded)."""
    auth = f"{quote(username, safe='')}:{quote(password, safe='')}@" if username or password else ""
    hosts = ",".join(f"[{h}]:{p}" if ":" in h else f"{h}:{p}" for h, p in nodes)
    return f"{'rediss' if tls else 'redis'}+cluster://{auth}{hosts}/0"
