"""This runtime's instances in the registry: registration, heartbeats, state changes, deregistration."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

import anyio

from bus.errors import DeadlineExceeded, NoCapableAgent, Unavailable
from discovery import LocalView, Registry
from discovery.errors import RegistrationRefused

from ..observability.telemetry import Telemetry
from .hosting import AgentHost

__all__ = ["STATE_WRITES", "Presence"]

log = logging.getLogger("a2a.runtime")

STATE_WRITES = 2
"""State changes written per heartbeat interval at most: an instance flipping busy and back on
every call costs the registry that many writes per interval whatever its call rate, and each
view that follows one of its capabilities (or its agent) that many events; other views hear
nothing of it (the latest state goes; this runtime's own view has each at once)."""


class Presence:
    """Keeps the registry (and this runtime's own view) told about the instances it hosts.

    A state change (busy, available) is written within about 20 ms instead of at the next
    heartbeat, and then at most ``STATE_WRITES`` times per interval (a burst, or an instance
    flipping on every call, is one write of the latest state); heartbeats re-register an
    instance the registry lost (it expired, or Redis restarted empty). This runtime's own view
    takes its instances' states from here, not from the registry's channels, which it may not
    follow.
    """

    def __init__(
        self,
        hosts: dict[str, AgentHost],
        registry: Registry | None,
        view: LocalView | None,
        *,
        clock: Callable[[], float],
        telemetry: Telemetry,
    ) -> None:
        self.hosts = hosts
        self.registry = registry
        self.view = view
        self.clock = clock
        self.telemetry = telemetry
        self.last_tick = self.last_ok = clock()
        self._changed = anyio.Event()
        self._down = False

    async def register(self, host: AgentHost) -> None:
        profile = host.profile()
        if self.view is not None:
            self.view.upsert(profile)
        if self.registry is not None:
            try:
                await self.registry.register(profile)
            except RegistrationRefused as exc:
                log.error("%s is not in the registry: %s (reachable by name only)", host.instance_id, exc)
                if self.view is not None:
                    self.view.remove(host.instance_id)  # nor routed by capability here
            except Unavailable as exc:
                log.warning("%s not registered yet (%s); heartbeats will retry", host.instance_id, exc)

    def changed(self, host: AgentHost) -> None:
        """A host's status changed: update the view now, the registry within a moment."""
        if self.view is not None:
            state = host.state()
            self.view.set_state(state.agent_id, state.status, state.load, state.capacity, state.trust)
        self._changed.set()

    async def stop(self, stop_tasks: Callable[[float], Coroutine[Any, Any, None]], grace: float) -> None:
        """Stop every host (and, beside them, the durable tasks' takers), then deregister them.

        All stop taking work first; each then has ``grace`` seconds to finish what it holds,
        and none closes before all have (or the grace ended): a handler finishing its work
        may still call another agent of this process on the way.
        """
        hosts = list(self.hosts.values())
        if not hosts:
            return
        async with anyio.create_task_group() as tg:
            for host in hosts:
                tg.start_soon(host.stop_taking)
        async with anyio.create_task_group() as tg:
            tg.start_soon(stop_tasks, grace)
            for host in hosts:
                tg.start_soon(host.drained, grace)
        async with anyio.create_task_group() as tg:
            for host in hosts:
                tg.start_soon(host.close)
        await self.deregister(hosts)
        self.hosts.clear()

    async def deregister(self, hosts: Sequence[AgentHost]) -> None:
        if self.registry is None:
            return
        with anyio.move_on_after(2.0):
            for host in hosts:
                if self.view is not None:
                    self.view.remove(host.instance_id)  # its down event may go to channels not followed
                try:
                    await self.registry.deregister(host.instance_id)
                except Unavailable as exc:
                    log.warning("could not deregister %s: %s", host.instance_id, exc)
                    break

    async def wait_for(self, names: Sequence[str], timeout: float) -> None:
        """Wait until the view has a live instance of every agent in ``names``.

        Raises:
            NoCapableAgent: this runtime has no registry.
            DeadlineExceeded: they did not all appear in time.
        """
        view = self.view
        if view is None:
            raise NoCapableAgent("waiting for agents needs a registry")
        with anyio.move_on_after(timeout):
            await view.follow(agents=names)
            await view.wait_until(lambda: all(view.instances_of(name) for name in names))
            return
        missing = {name for name in names if not view.instances_of(name)}
        raise DeadlineExceeded(f"agents not registered within {timeout}s: {', '.join(sorted(missing))}")

    async def run(self) -> None:
        """Heartbeat every interval (sooner after a state change) until cancelled."""
        registry = self.registry
        assert registry is not None
        self.last_tick = self.last_ok = self.clock()
        window = registry.heartbeat_interval / STATE_WRITES
        next_write = self.clock()
        while True:
            self.last_tick = self.clock()
            with anyio.move_on_after(registry.heartbeat_interval):
                await self._changed.wait()
            if self._changed.is_set():
                self._changed = anyio.Event()
                # A burst of flips is one write, and writes come one window apart at most.
                await anyio.sleep(max(0.02, next_write - self.clock()))
                next_write = self.clock() + window
            if not self.hosts:
                continue
            states = [h.state() for h in self.hosts.values()]
            if self.view is not None:  # its own instances: what it writes, whatever channels it follows
                for state in states:
                    self.view.set_state(state.agent_id, state.status, state.load, state.capacity, state.trust)
            try:
                missing = await registry.heartbeat(states)
                for host in self.hosts.values():
                    if host.instance_id in missing and not host.stopping:
                        with contextlib.suppress(RegistrationRefused):  # logged when it was served
                            await registry.register(host.profile())
                if self._down:
                    log.warning("registry reachable again; heartbeats resumed")
                self._down = False
                self.last_ok = self.clock()
            except Unavailable as exc:
                if not self._down:
                    log.warning("heartbeat failed: %s", exc)
                self._down = True
                self.telemetry.heartbeat_missed(len(self.hosts))

    def report(self, interval: float) -> dict[str, Any] | None:
        """Heartbeat ages, or None when there is nothing to heartbeat."""
        if self.registry is None or not self.hosts:
            return None
        now = self.clock()
        window = 3 * interval
        tick_age, ok_age = now - self.last_tick, now - self.last_ok
        return {
            "lastHeartbeatSeconds": round(ok_age, 3),
            "loopSeconds": round(tick_age, 3),
            "live": tick_age < window + interval,
            "ready": ok_age < window,
        }

    def health(self, runtime_id: str, nats_up: bool, interval: float) -> dict[str, Any]:
        """Liveness and readiness of a runtime, as its health endpoint reports them.

        Live while the heartbeat loop ticks; ready while NATS is connected and, with a
        registry, a heartbeat succeeded within three intervals.
        """
        heartbeats = self.report(interval)
        report: dict[str, Any] = {
            "runtime": runtime_id,
            "agents": {name: host.instance_id for name, host in self.hosts.items()},
            "nats": nats_up,
            "registry": None,
        }
        live = ready = nats_up
        if heartbeats is not None:
            live = heartbeats.pop("live")
            ready = ready and heartbeats.pop("ready")
            report["registry"] = heartbeats
        report["live"] = live
        report["ready"] = ready
        return report
