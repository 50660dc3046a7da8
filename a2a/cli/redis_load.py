"""``a2a redis-config --load``: the registry's function library and the roster's grants, written
into Redis by its admin."""

from __future__ import annotations

import json

import anyio
import redis.asyncio as aioredis
from redis.asyncio.cluster import ClusterNode, RedisCluster

from bus.errors import Unavailable
from bus.subjects import validate_name
from discovery import LIBRARY, load_library
from discovery.cluster import is_cluster_url, parse_cluster_url
from discovery.errors import redis_errors
from discovery.registry import RegistryKeys

from ..core.settings import check_redis_url
from ..delegation.roster import Roster
from .common import CommandError

__all__ = ["grants", "load", "load_functions", "load_grants"]


def grants(roster: Roster) -> dict[str, str]:
    """The grants hash's fields: agent name -> ``{"capabilities": [...], "maxInstances": n}``.

    Raises:
        ValueError: an agent's capabilities are not pinned (:func:`pinned_roster`).
    """
    fields = {}
    for name, rules in sorted(roster.agents.items()):
        if rules.capabilities is None:
            raise ValueError(f"the capabilities of roster agent {name!r} are not pinned")
        grant = {"capabilities": list(rules.capabilities), "maxInstances": rules.max_instances}
        fields[validate_name("agent name", name)] = json.dumps(grant, separators=(",", ":"))
    return fields


def _client_of(url: str) -> aioredis.Redis | RedisCluster:
    if not is_cluster_url(url):
        return aioredis.Redis.from_url(url, socket_connect_timeout=5.0, socket_timeout=10.0)
    seeds, options, tls = parse_cluster_url(url)
    nodes = [ClusterNode(host, port) for host, port in seeds]
    return RedisCluster(startup_nodes=nodes, ssl=tls, socket_connect_timeout=5.0, **options)


async def load_functions(url: str) -> None:
    """Load the registry's function library into the Redis at ``url`` (a user allowed to: the admin).

    On a Redis Cluster (``redis+cluster://``) every master gets it, so whichever holds a
    namespace's slot has it; load again after adding masters.

    Raises:
        Unavailable: Redis is unreachable, refuses the user, or is older than 7.
    """
    client = _client_of(url)
    try:
        with redis_errors("loading the registry's functions"):
            await load_library(client)
    finally:
        await client.aclose()


async def load_grants(url: str, namespace: str, roster: Roster) -> None:
    """Replace the namespace's grants hash with the (pinned) roster's, atomically (MULTI/EXEC).

    Raises:
        Unavailable: Redis is unreachable or refuses the user (only the admin may write it).
        ValueError: an agent's capabilities are not pinned.
    """
    fields = grants(roster)
    key = RegistryKeys(namespace).grants
    client = _client_of(url)
    try:
        with redis_errors("writing the roster's grants"):
            async with client.pipeline(transaction=True) as pipe:
                pipe.delete(key)
                if fields:
                    pipe.hset(key, mapping=fields)  # type: ignore[arg-type]
                await pipe.execute()
    finally:
        await client.aclose()


def load(url: str | None, namespace: str, roster: Roster) -> None:
    if not url:
        raise CommandError("--load needs REDIS_URL: the Redis URL of the admin user", status=2)
    try:
        check_redis_url(url)
    except ValueError as exc:
        raise CommandError(f"REDIS_URL: {exc}", status=2) from None

    async def load() -> None:
        await load_grants(url, namespace, roster)  # first: no moment with functions but no grants
        await load_functions(url)

    try:
        anyio.run(load)
    except Unavailable as exc:
        raise CommandError(str(exc)) from None
    print(f"loaded the registry's Redis functions ({LIBRARY}) and the grants of {len(roster.agents)} agents")
