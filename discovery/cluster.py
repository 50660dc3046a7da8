"""Redis Cluster for one namespace: a plain client whose connections follow the master of its slot.

Every key of a namespace carries the hash tag ``{<ns>}``, so on Redis Cluster a namespace
lives on one slot, hence on one master at a time. :func:`namespace_client` returns a plain
:class:`redis.asyncio.Redis` whose every connection connects to that master, so the code
written for one server runs unchanged: FCALL pipelines, EVAL, WATCH/MULTI and pub/sub (a
message published on any node reaches the subscribers of every node).

- A connection about to connect asks the known nodes (the URL's seeds, then the nodes
  named by earlier answers; those that failed last) ``CLUSTER SLOTS`` for the slot's
  master, and connects there. The answer is shared by the client's connections (and by
  pools cloned from its connection kwargs) until one of them finds it wrong.
- A ``MOVED`` reply (a replica was promoted; the old master, still up or restarted, now
  serves as its replica) points the connections at the new master; ``ASK``,
  ``TRYAGAIN``, ``CLUSTERDOWN``, ``READONLY`` or a failed connection make the next
  connect ask again. Such a connection is dropped when back in the pool, and a pooled
  one to the old master reconnects when next taken (a subscriber's stays: any node
  delivers its messages).
- :func:`cluster_retry`, the default retry policy, retries what the server did not run:
  those replies, and connections to the master that could not be opened. While the slot
  has no reachable master (between a master's death and its replica's promotion) a
  command fails within about half a second with a ``redis.exceptions.ConnectionError``,
  which the registry and the stores report as ``Unavailable``; once a replica is
  promoted the next command reaches it. A connection lost with a command in flight is
  not retried, as with one server: the command may have run, and a subscriber must
  hear of it (redis-py would subscribe again silently, losing what was published meanwhile).

Not done: ``ASK`` is not followed, so while the namespace's slot migrates to another
master the keys already moved fail until the migration ends; a key of another slot fails
with an error naming both slots. Functions live on each master and are replicated to its
replicas, so a promoted replica has the registry's library; a master the slot migrates to
does not, and the registry loads it there when its user may (``discovery._library``).

The connection class overrides redis-py internals: tests/cluster/test_redis_contract.py checks
them, and pyproject.toml keeps redis below the next major version until that test passes on it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import unquote, urlsplit

import redis.asyncio as aioredis
import redis.exceptions as rx
from redis.asyncio.connection import Connection, SSLConnection, parse_url
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialWithJitterBackoff, NoBackoff
from redis.crc import key_slot

from bus.subjects import validate_name

__all__ = [
    "CLUSTER_SCHEMES",
    "MasterUnreachable",
    "SlotMaster",
    "SlotMasterConnection",
    "SlotMasterNotFound",
    "SlotMasterSSLConnection",
    "cluster_retry",
    "is_cluster_url",
    "namespace_client",
    "parse_cluster_url",
    "parse_slots",
]

CLUSTER_SCHEMES = ("redis+cluster", "rediss+cluster")
DEFAULT_PORT = 6379
MAX_LEARNED = 64
"""Nodes remembered from one answer at most (a cluster's masters and replicas)."""

Address = tuple[str, int]

_REROUTE = (rx.AskError, rx.TryAgainError, rx.ClusterDownError, rx.ReadOnlyError)
"""Replies that say the slot is served elsewhere, or not yet: the command did not run."""
_PROBE_OPTIONS = ("username", "password", "credential_provider", "socket_connect_timeout", "socket_timeout")
"""Connection options the nodes asked for the slot's master get (besides ``ssl_*``)."""


class MasterUnreachable(rx.ConnectionError):
    """No connection to the slot's master could be opened: nothing was sent, a retry is safe."""


class SlotMasterNotFound(MasterUnreachable):
    """No known node answered with a master for the namespace's slot."""


def is_cluster_url(url: str) -> bool:
    """True for ``redis+cluster://`` and ``rediss+cluster://`` URLs."""
    return urlsplit(url).scheme.lower() in CLUSTER_SCHEMES


def parse_cluster_url(url: str) -> tuple[list[Address], dict[str, Any], bool]:
    """The seed nodes, connection options and TLS flag of a cluster URL.

    ``redis+cluster://[user:pass@]host1:port1[,host2:port2...][/0][?option=value...]``, or
    ``rediss+cluster://`` for TLS; the port defaults to 6379, an IPv6 host is in brackets.
    The options are what :func:`redis.asyncio.connection.parse_url` reads.

    Raises:
        ValueError: another scheme, no host, a bad port, a database other than 0.
    """
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in CLUSTER_SCHEMES:
        raise ValueError(f"not a Redis Cluster URL (expected {' or '.join(CLUSTER_SCHEMES)}://)")
    userinfo, _, hostlist = parts.netloc.rpartition("@")
    seeds = [_address(item) for item in hostlist.split(",") if item.strip()]
    if not seeds:
        raise ValueError("a Redis Cluster URL names at least one host:port")
    tls = scheme == "rediss+cluster"
    single = f"{'rediss' if tls else 'redis'}://{userinfo + '@' if userinfo else ''}localhost{parts.path}"
    parsed = parse_url(single + (f"?{parts.query}" if parts.query else ""))
    options: dict[str, Any] = {
        k: v for k, v in parsed.items() if k not in ("host", "port", "connection_class")
    }
    if int(options.pop("db", 0) or 0) != 0:
        raise ValueError("Redis Cluster has only database 0")
    return seeds, options, tls


def _address(item: str) -> Address:
    item = item.strip()
    if item.startswith("["):
        host, _, rest = item[1:].partition("]")
        port = rest.removeprefix(":")
    else:
        host, _, port = item.rpartition(":") if ":" in item else (item, "", "")
    host = unquote(host)
    if not host or (port and not port.isdigit()) or not 0 < int(port or DEFAULT_PORT) < 65536:
        raise ValueError(f"invalid Redis Cluster node {item!r}: expected host:port")
    return host, int(port or DEFAULT_PORT)


def cluster_retry() -> Retry:
    """Three quick retries of what the server did not run: redirections, and connects that failed.

    Never of a timeout, nor of a connection lost with a command in flight (see above).
    """
    return Retry(ExponentialWithJitterBackoff(cap=0.25, base=0.05), 3, (MasterUnreachable, *_REROUTE))


class SlotMaster:
    """Finds, and remembers until told otherwise, the master of one slot (``redis.crc.key_slot``).

    ``seeds`` are asked first; ``probe_class`` and ``probe_options`` (credentials, TLS,
    timeouts) make the connections that ask.
    """

    def __init__(
        self,
        seeds: Sequence[Address],
        slot: int,
        *,
        probe_class: type[Connection] = Connection,
        probe_options: dict[str, Any] | None = None,
    ) -> None:
        if not seeds:
            raise ValueError("no seed node")
        self.seeds = tuple(dict.fromkeys(seeds))
        self.slot = slot
        self.probe_class = probe_class
        self.probe_options = {**(probe_options or {}), "retry": Retry(NoBackoff(), 0)}
        self.master: Address | None = None
        """The slot's master as last found, or None when it must be asked for."""
        self.learned: tuple[Address, ...] = ()
        """The nodes the last answer named (masters and replicas of every slot)."""
        self.lookups = 0
        """Times the nodes were asked (for tests and metrics)."""
        self._failed: dict[Address, float] = {}
        self._lock = asyncio.Lock()

    @property
    def nodes(self) -> list[Address]:
        """The nodes to ask, in order: seeds then learned ones, those that failed last (oldest first)."""
        known = list(dict.fromkeys((*self.seeds, *self.learned)))
        return sorted(known, key=lambda node: self._failed.get(node, 0.0))

    async def address(self) -> Address:
        """The slot's master, asking the nodes when it is not known.

        Raises:
            SlotMasterNotFound: no node answered, or none knows a master for the slot.
        """
        master = self.master
        if master is not None:
            return master
        async with self._lock:  # connections opened together share one lookup
            if self.master is None:
                self.master = await self._lookup()
            return self.master

    def forget(self, address: Address) -> None:
        """``address`` failed as the slot's master: ask the nodes again next time."""
        self._failed[address] = time.monotonic()
        if self.master == address:
            self.master = None

    def moved(self, address: Address) -> None:
        """A node answered MOVED to ``address`` for the slot: that is its master now."""
        self._failed.pop(address, None)
        self.master = address

    async def _lookup(self) -> Address:
        self.lookups += 1
        problems = []
        for node in self.nodes:
            try:
                found, learned = await self._ask(node)
            except (rx.RedisError, OSError, ValueError, TypeError, IndexError) as exc:
                self._failed[node] = time.monotonic()
                problems.append(f"{node[0]}:{node[1]}: {exc}")
                continue
            self._failed.pop(node, None)
            if learned:
                self.learned = tuple(learned[:MAX_LEARNED])
            if found is not None:
                return found
            problems.append(f"{node[0]}:{node[1]}: no master serves slot {self.slot}")
        raise SlotMasterNotFound(f"no master found for slot {self.slot}: {'; '.join(problems)}")

    async def _ask(self, node: Address) -> tuple[Address | None, list[Address]]:
        conn = self.probe_class(host=node[0], port=node[1], **self.probe_options)
        try:
            await conn.connect()  # type: ignore[no-untyped-call]
            await conn.send_command("CLUSTER", "SLOTS")
            reply = await conn.read_response()
        finally:
            await conn.disconnect(nowait=True)
        return parse_slots(reply, self.slot, node[0])


def parse_slots(reply: Any, slot: int, asked: str) -> tuple[Address | None, list[Address]]:
    """The master of ``slot`` and every node named in a ``CLUSTER SLOTS`` reply from host ``asked``.

    Raises:
        TypeError, ValueError, IndexError: the reply is not a CLUSTER SLOTS reply.
    """
    if not isinstance(reply, list):
        raise TypeError(f"CLUSTER SLOTS answered {type(reply).__name__}")
    master = None
    nodes: dict[Address, None] = {}
    for entry in reply:
        start, end, *served = entry
        addresses = [_endpoint(node, asked) for node in served]
        nodes.update((a, None) for a in addresses if a is not None)
        if int(start) <= slot <= int(end) and addresses and addresses[0] is not None:
            master = addresses[0]
    return master, list(nodes)


def _endpoint(node: Any, asked: str) -> Address | None:
    """A node of a CLUSTER SLOTS reply: [endpoint, port, id, metadata...] (None: no usable address)."""
    endpoint, port = node[0], int(node[1])
    if isinstance(endpoint, bytes):
        endpoint = endpoint.decode()
    if endpoint == "?":  # preferred endpoint type hostname, and this node has none: its IP
        meta = node[3] if len(node) > 3 else []
        pairs = dict(zip(meta[::2], meta[1::2], strict=False)) if isinstance(meta, list) else dict(meta)
        endpoint = pairs.get("ip", pairs.get(b"ip"))
        endpoint = endpoint.decode() if isinstance(endpoint, bytes) else endpoint
    elif not endpoint:  # unknown: the node that answered, at the port given
        endpoint = asked
    if not endpoint or not 0 < port < 65536:
        return None
    return str(endpoint), port


class SlotMasterConnection(Connection):
    """A connection to whichever node is the master of its :class:`SlotMaster`'s slot.

    It looks the master up when it connects (rather than at a fixed host), reconnects
    when taken from the pool while the master it reached is known to have changed, and
    reports to its ``slot_master`` the replies and failures that say the master moved.
    """

    def __init__(self, *, slot_master: SlotMaster, **kwargs: Any) -> None:
        self.slot_master = slot_master
        self.subscriber = False
        """A subscriber's (``PubSub``) connection: left where it is (any node delivers every message)."""
        host, port = slot_master.master or slot_master.seeds[0]
        super().__init__(host=host, port=port, **kwargs)

    def repr_pieces(self) -> list[tuple[str, Any]]:
        return [("slot", self.slot_master.slot), ("host", self.host), ("port", self.port)]

    @property
    def address(self) -> Address:
        return self.host, self.port

    def register_connect_callback(self, callback: Any) -> None:
        super().register_connect_callback(callback)  # type: ignore[no-untyped-call]
        self.subscriber = True  # only a PubSub registers one (to subscribe again on reconnect)

    def deregister_connect_callback(self, callback: Any) -> None:
        super().deregister_connect_callback(callback)  # type: ignore[no-untyped-call]
        self.subscriber = False

    async def connect(self) -> None:
        master = self.slot_master.master
        if self.is_connected and not self.subscriber and master is not None and master != self.address:
            await self.disconnect()  # to the old master (pooled across a failover): no MOVED round trip
        await super().connect()  # type: ignore[no-untyped-call]

    async def connect_check_health(
        self, check_health: bool = True, retry_socket_connect: bool = True
    ) -> None:
        # The retry policy wraps every connect already (``connect`` and the command path):
        # each of its attempts looks the master up again, never retrying a stale address.
        if self.is_connected:
            return
        self.host, self.port = address = await self.slot_master.address()
        try:
            await super().connect_check_health(check_health=check_health, retry_socket_connect=False)
        except rx.AuthenticationError:
            raise  # the master is fine, the credentials are not
        except rx.ConnectionError as exc:
            self.slot_master.forget(address)
            raise MasterUnreachable(str(exc)) from exc
        except rx.RedisError:
            self.slot_master.forget(address)
            raise

    async def read_response(
        self,
        disable_decoding: bool = False,
        timeout: float | None = None,
        *,
        disconnect_on_error: bool = True,
        push_request: bool | None = False,
    ) -> Any:
        try:
            return await super().read_response(
                disable_decoding=disable_decoding,
                timeout=timeout,
                disconnect_on_error=disconnect_on_error,
                push_request=push_request,
            )
        except rx.AskError as exc:  # MovedError too
            if exc.slot_id != self.slot_master.slot:
                raise rx.ResponseError(
                    f"a key of slot {exc.slot_id} sent to the client of slot {self.slot_master.slot}: "
                    "every key must carry the namespace's hash tag"
                ) from exc
            if isinstance(exc, rx.MovedError):
                self.slot_master.moved(exc.node_addr)
            else:
                self.slot_master.forget(self.address)
            # Dropped when back in the pool: the replies still due on it are read first.
            self.mark_for_reconnect()  # type: ignore[no-untyped-call]
            raise
        except _REROUTE:
            self.slot_master.forget(self.address)
            self.mark_for_reconnect()  # type: ignore[no-untyped-call]
            raise
        except (rx.ConnectionError, rx.TimeoutError):
            self.slot_master.forget(self.address)
            raise


class SlotMasterSSLConnection(SlotMasterConnection, SSLConnection):
    """:class:`SlotMasterConnection` over TLS."""


def namespace_client(url: str, namespace: str, **kwargs: Any) -> aioredis.Redis:
    """A client of the master of ``namespace``'s slot on the Redis Cluster at ``url``.

    ``url``: ``redis+cluster://[user:pass@]host1:port1[,host2:port2...][/0]`` (``rediss+``
    for TLS). ``kwargs``: options of :class:`redis.asyncio.ConnectionPool` (``decode_responses``,
    ``socket_timeout``, ``max_connections``, ``ssl_ca_certs``...); the URL's query wins.
    Without a ``retry`` option, :func:`cluster_retry`. Use it as one server's client, for
    the namespace's keys.

    Raises:
        ValueError: not a cluster URL (see :func:`parse_cluster_url`) or an invalid namespace.
        TypeError: an option no connection takes.
    """
    validate_name("namespace", namespace)
    seeds, url_options, tls = parse_cluster_url(url)
    options: dict[str, Any] = {**kwargs, **url_options}
    tls = bool(options.pop("ssl", False)) or tls
    if int(options.pop("db", 0) or 0) != 0:
        raise ValueError("Redis Cluster has only database 0")
    options.setdefault("retry", cluster_retry())
    probe = {k: v for k, v in options.items() if k in _PROBE_OPTIONS or k.startswith("ssl_")}
    slot = key_slot(f"{{{namespace}}}".encode())
    master = SlotMaster(seeds, slot, probe_class=SSLConnection if tls else Connection, probe_options=probe)
    connection_class = SlotMasterSSLConnection if tls else SlotMasterConnection
    pool = aioredis.ConnectionPool(
        connection_class=connection_class,
        max_connections=options.pop("max_connections", None),
        slot_master=master,
        **options,
    )
    connection_class(**pool.connection_kwargs)  # a wrong option fails here, not at the first command
    return aioredis.Redis.from_pool(pool)
