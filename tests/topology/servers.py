r"""A hub cluster with JetStream and one site's leaf node, as nats-server processes on loopback.

    hub-1 --- hub-2 --- hub-3      one cluster (routes), JetStream, a leafnode listener each
      \        |        /
       link   link   link          tests.topology.link.Link: one forwarder per hub node
          \     |     /
             leaf                  no JetStream; remotes = the three links

Every server's configuration is written to its own work directory; ports are free ports
picked when the object is built. Runtimes on the hub connect to hub-1, runtimes on the
site to the leaf.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from a2a.dev.servers import ServerProcess, free_port, nats_server_binary

from .link import Link

__all__ = ["HubNode", "LeafNode", "Topology", "leaf_links", "monitor", "wait_for"]

HUB_SIZE = 3
LEAF_RECONNECT = "250ms"
"""How soon the leaf dials the hub again after losing the link (the default is seconds)."""


def wait_for(predicate: Callable[[], bool], timeout: float, what: str, interval: float = 0.02) -> None:
    """Poll ``predicate`` until it holds; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout}s")
        time.sleep(interval)


def monitor(http_port: int, endpoint: str) -> dict[str, Any] | None:
    """A monitoring endpoint's JSON (``/leafz``, ``/jsz``...), or None while unreachable."""
    url = f"http://127.0.0.1:{http_port}{endpoint}"
    try:
        with urllib.request.urlopen(url, timeout=0.5) as response:
            return json.load(response)  # type: ignore[no-any-return]
    except (OSError, ValueError, urllib.error.URLError):
        return None


def leaf_links(http_port: int) -> int | None:
    """How many leafnode connections the server on ``http_port`` reports (None while unreachable)."""
    leafz = monitor(http_port, "/leafz")
    return None if leafz is None else int(leafz.get("leafnodes", 0))


class ConfiguredNats(ServerProcess):
    """nats-server started from a configuration file this object writes."""

    scheme = "nats"

    def __init__(self, server_name: str) -> None:
        self.name = server_name
        super().__init__()
        self.server_name = server_name
        self.http_port = free_port()

    def config(self) -> str:
        raise NotImplementedError

    def argv(self) -> list[str]:
        # Written here, not earlier: a retried start may have moved to another client port.
        path = self.workdir / "server.conf"
        path.write_text(self.config())
        return [nats_server_binary(), "-c", str(path)]

    def monitor(self, endpoint: str) -> dict[str, Any] | None:
        return monitor(self.http_port, endpoint)


class HubNode(ConfiguredNats):
    """One node of the hub cluster: JetStream, routes to every node, a leafnode listener."""

    # no_advertise: the hub tells leaf nodes no other addresses of its own, so the leaf
    # reaches the hub only through the links the test controls.
    def __init__(self, index: int, cluster_ports: list[int]) -> None:
        super().__init__(f"hub-{index + 1}")
        self.cluster_port = cluster_ports[index]
        self.cluster_ports = cluster_ports
        self.leaf_port = free_port()

    def config(self) -> str:
        routes = ", ".join(f"nats://127.0.0.1:{p}" for p in self.cluster_ports)
        return f"""
server_name: {self.server_name}
listen: 127.0.0.1:{self.port}
http: 127.0.0.1:{self.http_port}
jetstream {{ store_dir: "{self.workdir / "jetstream"}" }}
cluster {{ name: hub, listen: 127.0.0.1:{self.cluster_port}, routes: [{routes}] }}
leafnodes {{ listen: 127.0.0.1:{self.leaf_port}, no_advertise: true }}
"""

    def has_meta_leader(self) -> bool:
        """JetStream is usable: the cluster's metadata leader is known to this node."""
        jsz = self.monitor("/jsz")
        return bool(jsz and (jsz.get("meta_cluster") or {}).get("leader"))


class LeafNode(ConfiguredNats):
    """A site's server: no JetStream of its own; its remotes are the links to the hub."""

    def __init__(self, links: list[Link]) -> None:
        super().__init__("leaf")
        self.links = links

    def config(self) -> str:
        urls = ", ".join(f'"{link.url}"' for link in self.links)
        return f"""
server_name: {self.server_name}
listen: 127.0.0.1:{self.port}
http: 127.0.0.1:{self.http_port}
leafnodes {{
  reconnect: "{LEAF_RECONNECT}"
  remotes = [ {{ urls: [{urls}] }} ]
}}
"""

    def hub_links(self) -> int | None:
        """How many leafnode connections to the hub are up, as the leaf reports them."""
        return leaf_links(self.http_port)


@dataclass
class Topology:
    hub: list[HubNode]
    leaf: LeafNode
    links: list[Link]

    @property
    def hub_url(self) -> str:
        """Where hub-side runtimes connect (hub-1; the client learns the other nodes)."""
        return self.hub[0].url

    @property
    def leaf_url(self) -> str:
        return self.leaf.url

    @classmethod
    def start(cls) -> Topology:
        cluster_ports = [free_port() for _ in range(HUB_SIZE)]
        hub = [HubNode(i, cluster_ports) for i in range(HUB_SIZE)]
        links = [Link(("127.0.0.1", node.leaf_port)).restore() for node in hub]
        topology = cls(hub, LeafNode(links), links)
        try:
            for server in [*hub, topology.leaf]:
                server.start()
            wait_for(lambda: all(n.has_meta_leader() for n in hub), 20, "JetStream meta leader on the hub")
            topology.wait_link_up()
        except BaseException:
            topology.stop()
            raise
        return topology

    def wait_link_up(self, timeout: float = 10) -> None:
        wait_for(lambda: (self.leaf.hub_links() or 0) > 0, timeout, "the leaf's link to the hub")

    def wait_link_down(self, timeout: float = 5) -> None:
        wait_for(lambda: self.leaf.hub_links() == 0, timeout, "the leaf noticing its link is gone")

    def cut(self) -> None:
        """The site loses its uplink: every link closes, reconnects are refused."""
        for link in self.links:
            link.cut()
        self.wait_link_down()

    def blackhole(self) -> None:
        """The uplink silently stops delivering; the leaf still believes it is connected."""
        for link in self.links:
            link.blackhole()

    def restore(self) -> None:
        """The uplink comes back (after a cut or a blackhole); wait until the leaf has reconnected."""
        for link in self.links:
            link.cut()  # a blackholed connection carries a torn stream: drop it
        self.wait_link_down()
        for link in self.links:
            link.restore()
        self.wait_link_up()

    def stop(self) -> None:
        for link in self.links:
            link.close()
        for server in [self.leaf, *self.hub]:
            server.cleanup()
