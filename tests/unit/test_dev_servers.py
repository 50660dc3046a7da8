"""Ports for the servers a process starts: never the same one twice in a row."""

from __future__ import annotations

from a2a.dev.servers import free_port


def test_ports_handed_out_before_any_is_bound_are_all_different() -> None:
    # A cluster's configuration names its client, route, leaf and monitoring ports before
    # any server binds them; the kernel may offer a released port again at once.
    ports = [free_port() for _ in range(300)]
    assert len(set(ports)) == len(ports)
