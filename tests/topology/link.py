"""A TCP forwarder standing for a site's uplink: its leaf node's link to the hub, or its path to Redis.

The leaf server dials the forwarder, which dials the hub's leafnode port, so a test can
break the link the way networks break while both servers keep running:

- :meth:`Link.cut` closes every connection and refuses new ones, as when a site's uplink
  drops or a firewall rejects it: the leaf notices at once (the connection closes).
- :meth:`Link.blackhole` keeps the connections open but delivers nothing, as on a silent
  partition: neither server notices until its pings go unanswered.
- :meth:`Link.restore` accepts connections again; the leaf reconnects by itself.

Threads, not the event loop of a test: the link outlives each test's loop.
"""

from __future__ import annotations

import contextlib
import socket
import threading

from a2a.dev.servers import free_port

__all__ = ["Link"]

CHUNK = 64 * 1024


class Link:
    """Forwards ``127.0.0.1:<port>`` to ``target`` until cut."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.port = free_port()
        self._lock = threading.Lock()
        self._conns: set[socket.socket] = set()
        self._listener: socket.socket | None = None
        self._dropping = threading.Event()

    @property
    def url(self) -> str:
        return f"nats-leaf://127.0.0.1:{self.port}"

    def restore(self) -> Link:
        """Forward again: listen on the same port (new connections only)."""
        self._dropping.clear()
        if self._listener is None:
            listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind(("127.0.0.1", self.port))
            listener.listen(16)
            self._listener = listener
            threading.Thread(target=self._accept, args=(listener,), daemon=True).start()
        return self

    def cut(self) -> None:
        """Close every connection and stop listening: connection refused from now on."""
        with self._lock:
            listener, self._listener = self._listener, None
            conns, self._conns = self._conns, set()
        if listener is not None:
            _close(listener)
        for conn in conns:
            _close(conn)

    def blackhole(self) -> None:
        """Keep connections open but drop every byte either way (a silent partition)."""
        self._dropping.set()

    def close(self) -> None:
        self.cut()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # cut: the listener was closed
            try:
                upstream = socket.create_connection(self.target, timeout=2)
                upstream.settimeout(None)
            except OSError:
                _close(client)
                continue
            with self._lock:
                if self._listener is not listener:  # cut meanwhile
                    _close(client)
                    _close(upstream)
                    return
                self._conns |= {client, upstream}
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        while True:
            try:
                data = source.recv(CHUNK)
            except OSError:
                data = b""
            if not data:
                break
            if self._dropping.is_set():
                continue  # delivered nowhere: the peer waits for bytes that never come
            try:
                sink.sendall(data)
            except OSError:
                break
        _close(source)
        _close(sink)


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()
