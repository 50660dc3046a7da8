"""deploy/ for sites: the hub and leaf configurations, the compose override and the manifests.

The files are cross-checked against each other, and nats/hub.conf and nats/leaf-site.conf
run for real: three hub nodes and a site's leaf node that logs in with the site's user,
roster users calling across the link, and the site's server enforcing the roster.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import nats
import pytest
import yaml

from a2a import Agent, Context, Policy, Runtime, Settings
from a2a.cli.nats_config import password_variable
from a2a.demo.run import ROSTER
from a2a.dev.servers import ServerProcess, free_port, nats_server_binary
from a2a.errors import NoResponders, PermissionDenied
from tests.helpers import ROOT

from .servers import leaf_links, wait_for

DEPLOY = ROOT / "deploy"
NATS = DEPLOY / "nats"
HUB_CONF, LEAF_CONF = NATS / "hub.conf", NATS / "leaf-site.conf"
LEAF_PASSWORD = "A2A_NATS_LEAF_PASSWORD_SITE_1"
SITE_URL = "nats://nats-site-1:4222"


def conf_variables(path: Path) -> set[str]:
    """The environment variables a configuration uses, its includes' too."""
    code = "\n".join(line.split("#", 1)[0] for line in path.read_text().splitlines())
    found = set(re.findall(r"\$([A-Z][A-Z0-9_]*)", re.sub(r'"[^"]*"', "", code)))
    for include in re.findall(r"^\s*include\s+(\S+)", code, re.M):
        found |= conf_variables(path.parent / include.strip("\"'"))
    return found


def users() -> list[str]:
    """The NATS users of auth.conf, by their password variables."""
    variables = re.findall(r"\$A2A_NATS_PASSWORD_([A-Z0-9_]+)", (NATS / "auth.conf").read_text())
    return sorted({v.lower() for v in variables})


def dotenv() -> dict[str, str]:
    pairs = (line.split("=", 1) for line in (DEPLOY / ".env").read_text().splitlines() if "=" in line)
    return {k.strip(): v.strip() for k, v in pairs if not k.strip().startswith("#")}


# -- static cross-checks ---------------------------------------------------------------


@pytest.mark.parametrize("conf", [HUB_CONF, LEAF_CONF], ids=["hub", "leaf"])
def test_nats_server_accepts_the_configuration(conf: Path) -> None:
    env = {**os.environ, **{v: v.lower() for v in conf_variables(conf)}, "NATS_STORE_DIR": "/tmp/js"}
    env.update(
        {name: "4222" for name in ("NATS_PORT", "NATS_HTTP_PORT", "NATS_CLUSTER_PORT", "NATS_LEAF_PORT")}
    )
    env.update({f"NATS_ROUTE_{i}": f"nats://127.0.0.1:{6222 + i}" for i in (1, 2, 3)})
    env.update({f"NATS_HUB_{i}": f"nats-leaf://site-1:pw@127.0.0.1:{7422 + i}" for i in (1, 2, 3)})
    result = subprocess.run(
        [nats_server_binary(), "-t", "-c", str(conf)], env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


def test_the_compose_override_runs_hub_nodes_a_site_and_site_agents() -> None:
    base = yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())["services"]
    override = yaml.safe_load((DEPLOY / "docker-compose.leaf.yml").read_text())["services"]
    assert LEAF_PASSWORD in dotenv()
    for i in (1, 2, 3):
        hub = override[f"nats-{i}"]
        assert hub["command"] == ["-c", "/etc/nats/hub.conf"]
        merged = {**base[f"nats-{i}"]["environment"], **hub["environment"]}  # compose merges by key
        assert conf_variables(HUB_CONF) <= set(merged), conf_variables(HUB_CONF) - set(merged)
        assert merged[LEAF_PASSWORD] == "${" + LEAF_PASSWORD + "}"
    site = override["nats-site-1"]
    assert site["image"] == base["nats-1"]["image"] and site["command"] == ["-c", "/etc/nats/leaf-site.conf"]
    assert "./nats:/etc/nats:ro" in site["volumes"]
    env = site["environment"]
    assert conf_variables(LEAF_CONF) <= set(env), conf_variables(LEAF_CONF) - set(env)
    for i in (1, 2, 3):
        assert env[f"NATS_HUB_{i}"] == f"nats-leaf://site-1:${{{LEAF_PASSWORD}}}@nats-{i}:7422"
    for agent in ("reader", "writer"):
        assert override[agent]["environment"] == {"NATS_URL": SITE_URL}
        assert agent in base and "nats-site-1" in override[agent]["depends_on"]


def manifests(path: Path) -> dict[tuple[str, str], Any]:
    return {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(path.read_text()) if d}


def container_env(doc: dict[str, Any]) -> list[dict[str, Any]]:
    (container,) = doc["spec"]["template"]["spec"]["containers"]
    return container["env"]  # type: ignore[no-any-return]


def test_the_kubernetes_hub_accepts_sites_and_site_1_joins_it() -> None:
    hub = manifests(DEPLOY / "k8s" / "a2a.yaml")
    (node,) = hub[("StatefulSet", "nats")]["spec"]["template"]["spec"]["containers"]
    assert node["args"] == ["-c", "/etc/nats/hub.conf"]
    assert {"name": "leafnodes", "containerPort": 7422} in node["ports"]
    assert {"name": "NATS_LEAF_PORT", "value": "7422"} in node["env"]
    assert {"name": "leafnodes", "port": 7422} in hub[("Service", "nats")]["spec"]["ports"]
    kustomization = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())
    config = next(g for g in kustomization["configMapGenerator"] if g["name"] == "a2a-nats-config")
    assert {"nats/hub.conf", "nats/leaf-site.conf"} <= set(config["files"])

    site_dir = DEPLOY / "k8s" / "site-1"
    site_kustomization = yaml.safe_load((site_dir / "kustomization.yaml").read_text())
    site: dict[tuple[str, str], Any] = {}
    for resource in site_kustomization["resources"]:
        site.update(manifests(site_dir / resource))
    leaf = site[("Deployment", "nats-site-1")]
    env = container_env(leaf)
    names = [e["name"] for e in env]
    passwords = {password_variable(u) for u in users()}  # from the Secret, through envFrom
    assert conf_variables(LEAF_CONF) - passwords <= set(names)
    assert names.index(LEAF_PASSWORD) < min(names.index(f"NATS_HUB_{i}") for i in (1, 2, 3))
    for i in (1, 2, 3):  # $(VAR) expands only variables defined earlier in the list
        url = f"nats-leaf://site-1:$({LEAF_PASSWORD})@nats-{i - 1}.nats:7422"
        assert {"name": f"NATS_HUB_{i}", "value": url} in env
    assert site[("Service", "nats-site-1")]["spec"]["selector"] == {"app": "nats-site-1"}
    reader = {e["name"]: e for e in container_env(site[("Deployment", "reader-site-1")])}
    assert reader["NATS_URL"]["value"] == SITE_URL and reader["NATS_USER"]["value"] == "reader"
    if shutil.which("kubectl"):  # the real renderer, where there is one
        for directory in (DEPLOY, site_dir):
            result = subprocess.run(["kubectl", "kustomize", str(directory)], capture_output=True, text=True)
            assert result.returncode == 0, result.stderr


# -- the configurations, for real ------------------------------------------------------


class DeployedNats(ServerProcess):
    """A deploy/nats configuration, every per-node setting from environment variables."""

    name = "nats-deployed"
    scheme = "nats"

    def __init__(self, conf: Path, **env: str) -> None:
        super().__init__()
        self.conf = conf
        self.http_port = free_port()
        self.env = {
            **{password_variable(u): f"{u}-test-pw" for u in users()},
            LEAF_PASSWORD: "site-1-test-pw",
            "NATS_PORT": str(self.port),
            "NATS_HTTP_PORT": str(self.http_port),
            **env,
        }

    def argv(self) -> list[str]:
        self.env["NATS_PORT"] = str(self.port)  # a retried start may have moved to another port
        return [nats_server_binary(), "-c", str(self.conf)]


def hub_nodes() -> list[DeployedNats]:
    cluster_ports = [free_port() for _ in range(3)]
    routes = {f"NATS_ROUTE_{k + 1}": f"nats://127.0.0.1:{p}" for k, p in enumerate(cluster_ports)}
    nodes = []
    for i, port in enumerate(cluster_ports):
        node = DeployedNats(HUB_CONF, NATS_SERVER_NAME=f"hub-{i + 1}", NATS_CLUSTER_PORT=str(port), **routes)
        node.env.update(NATS_STORE_DIR=str(node.workdir / "jetstream"), NATS_LEAF_PORT=str(free_port()))
        nodes.append(node)
    return nodes


def site_leaf(hub: list[DeployedNats], password: str) -> DeployedNats:
    urls = {
        f"NATS_HUB_{i + 1}": f"nats-leaf://site-1:{password}@127.0.0.1:{node.env['NATS_LEAF_PORT']}"
        for i, node in enumerate(hub)
    }
    return DeployedNats(LEAF_CONF, NATS_SERVER_NAME="site-1", **urls)


@pytest.fixture(scope="module")
def deployed() -> Iterator[tuple[list[DeployedNats], DeployedNats]]:
    hub = hub_nodes()
    leaf = site_leaf(hub, "site-1-test-pw")
    try:
        for server in [*hub, leaf]:
            server.start()
        wait_for(lambda: (leaf_links(leaf.http_port) or 0) > 0, 10, "the site's link to the hub")
        yield hub, leaf
    finally:
        for server in [leaf, *hub]:
            server.cleanup()


def as_user(server: DeployedNats, user: str, **extra: Any) -> Settings:
    return Settings(
        nats_url=server.url,
        redis_url=None,
        namespace="demo",
        nats_user=user,
        nats_password=f"{user}-test-pw",
        roster=str(ROSTER),
        **{"audit": False, **extra},
    )


async def read_across_the_link(client: Runtime) -> Any:
    """The reader's answer, once its interest has crossed the link."""
    with anyio.fail_after(5):
        while True:
            try:
                return await client.call("reader", "read", timeout=1)
            except NoResponders:
                await anyio.sleep(0.02)


@pytest.mark.anyio
@pytest.mark.integration
@pytest.mark.timeout(30)
async def test_roster_users_call_across_the_link_and_the_site_enforces_the_roster(
    deployed: tuple[list[DeployedNats], DeployedNats],
) -> None:
    hub, leaf = deployed
    reader = Agent("reader")

    @reader.action("read")
    async def read(ctx: Context, params: dict[str, Any]) -> Any:
        return {"text": "site data", "caller": ctx.request.source_agent_id}

    async with Runtime(as_user(leaf, "reader")) as site, Runtime(as_user(hub[1], "client")) as client:
        await site.serve(reader)
        out = await read_across_the_link(client)
        assert out == {"text": "site data", "caller": "client"}
        # The site's server holds the roster's permissions: the reviewer may not call the
        # planner, whatever its runtime's own policy says.
        async with Runtime(as_user(leaf, "reviewer"), policy=Policy()) as rogue:
            with anyio.fail_after(2), pytest.raises(PermissionDenied) as info:
                await rogue.call("planner", "replan", timeout=5)
            assert info.value.details["subject"] == "a2a.demo.agent.planner.reviewer"


def test_a_site_with_a_wrong_password_gets_no_link(deployed: tuple[list[DeployedNats], DeployedNats]) -> None:
    hub, _ = deployed
    with site_leaf(hub, "not-the-password") as intruder:
        assert isinstance(intruder, DeployedNats)
        wait_for(
            lambda: "authorization violation" in intruder.log_tail(50).lower(),
            5,
            "the hub refusing the site's login",
        )
        assert leaf_links(intruder.http_port) == 0
        assert any('authentication error - user "site-1"' in node.log_tail(50).lower() for node in hub)


@pytest.mark.anyio
@pytest.mark.integration
@pytest.mark.timeout(60)
async def test_the_sites_audit_records_reach_the_hubs_stream_once(
    deployed: tuple[list[DeployedNats], DeployedNats],
) -> None:
    """The store account holds JetStream on the hub; a site's audit records cross the
    agents' link and the hub's agents' account passes them on: kept once in the hub's stream."""
    hub, leaf = deployed
    async with Runtime(as_user(hub[0], "auditor", audit=True)) as auditor:
        with anyio.fail_after(10):  # the hub's JetStream may still be electing its leader
            while not await auditor.audit.ensure_stream():
                await anyio.sleep(0.2)
    reader = Agent("reader")

    @reader.action("read")
    async def read(ctx: Context, params: dict[str, Any]) -> Any:
        return {"text": "site data"}

    async with (
        Runtime(as_user(leaf, "reader", audit=True)) as site,
        Runtime(as_user(hub[2], "client")) as client,
    ):
        await site.serve(reader)
        out = await read_across_the_link(client)
    assert out == {"text": "site data"}
    nc = await nats.connect(hub[1].url, user="admin", password="admin-test-pw")
    subject = "a2a.demo.audit.reader"
    try:
        js = nc.jetstream()
        with anyio.fail_after(5):
            while not (await js.stream_info("A2A_AUDIT_demo", subjects_filter=subject)).state.subjects:
                await anyio.sleep(0.1)
        await anyio.sleep(0.5)  # a second copy, were one on its way
        kept = (await js.stream_info("A2A_AUDIT_demo", subjects_filter=subject)).state.subjects
    finally:
        await nc.close()
    assert kept == {subject: 1}
