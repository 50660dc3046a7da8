"""deploy/: the files are checked against the code, and the NATS cluster config runs for real.

No Docker engine here: the compose file and manifests are parsed and cross-checked
(images, ports, environment names, commands, probes, secrets); the 3-node cluster
configuration they use is started from nats-server binaries on loopback ports, with
the demo agents spread over its nodes under their roster users.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml

from a2a import Policy, Runtime, Settings
from a2a.cli import build_parser
from a2a.cli.nats_config import password_variable, render_authorization
from a2a.cli.redis_config import cmd_redis_config, load_functions, render_acl
from a2a.cli.redis_config import password_variable as redis_password_variable
from a2a.core.settings import ENVIRONMENT
from a2a.delegation.roster import Roster
from a2a.demo.run import AGENT_PROCESSES, ROSTER, _drive
from a2a.demo.workspace import make_workspace
from a2a.dev.servers import RedisServer, ServerError, ServerProcess, free_port, nats_server_binary
from a2a.errors import PermissionDenied
from a2a.observability.telemetry import ENVIRONMENT as OTEL_ENVIRONMENT
from bus.errors import Unavailable
from discovery import AgentProfile, Registry
from tests.helpers import ROOT, AgentProcess

DEPLOY = ROOT / "deploy"
CONF = DEPLOY / "nats" / "cluster.conf"
KNOWN_ENV = set(ENVIRONMENT) | set(OTEL_ENVIRONMENT) | {"A2A_LOG_LEVEL", "PYTHONUNBUFFERED"}
CLIENTS = ["client", "gateway", "session", "console"]
USERS = ["planner", "reader", "writer", "reviewer", "scribe", "docs", *CLIENTS, "auditor", "admin"]
REDIS_USERS = ["planner", "reader", "writer", "reviewer", "scribe", "docs", *CLIENTS, "admin"]
REDIS_PASSWORDS = {redis_password_variable(u) for u in REDIS_USERS}
"""Kubernetes containers hold their Redis password in one of these to build REDIS_URL from."""
REDIS_AND_JAEGER = ("redis", "redis-functions", "jaeger")
LOAD_COMMAND = ["redis-config", "--roster", "/etc/a2a/roster.yaml", "--namespace", "demo", "--load"]
"""What loads the registry's Redis functions as the admin, before agents use them."""


def dotenv() -> dict[str, str]:
    pairs = (line.split("=", 1) for line in (DEPLOY / ".env").read_text().splitlines() if "=" in line)
    return {k.strip(): v.strip() for k, v in pairs if not k.strip().startswith("#")}


def conf_variables() -> set[str]:
    text = CONF.read_text() + (DEPLOY / "nats" / "auth.conf").read_text()
    code = "\n".join(line.split("#", 1)[0] for line in text.splitlines())
    code = re.sub(r'"[^"]*"', "", code)  # subjects such as "$JS.API..." are not variables
    return set(re.findall(r"\$([A-Z][A-Z0-9_]*)", code))


def check_a2a_command(argv: list[str]) -> None:
    """The container command parses as an `a2a` command whose agents import."""
    args = build_parser().parse_args(argv)
    if args.command == "serve":
        from a2a.cli.common import load_agents as _load_agents

        assert _load_agents(args.targets)


# -- static cross-checks ---------------------------------------------------------------


def test_auth_conf_is_what_the_roster_generates() -> None:
    expected = render_authorization(Roster.load(ROSTER), "demo")
    assert (DEPLOY / "nats" / "auth.conf").read_text() == expected, "regenerate with `a2a nats-config`"


def test_nats_server_accepts_the_cluster_configuration() -> None:
    env = {**os.environ, **{v: "x" for v in conf_variables()}, "NATS_PORT": "4222", "NATS_HTTP_PORT": "8222"}
    env["NATS_CLUSTER_PORT"] = "6222"
    env.update({f"NATS_ROUTE_{i}": f"nats://127.0.0.1:{6222 + i}" for i in (1, 2, 3)})
    result = subprocess.run(
        [nats_server_binary(), "-t", "-c", str(CONF)], env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


def test_compose_file_matches_the_code() -> None:
    compose = yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())
    services = compose["services"]
    secrets = dotenv()
    assert {f"nats-{i}" for i in (1, 2, 3)} | {"redis", "jaeger", *AGENT_PROCESSES, "task"} <= set(services)
    assert {"16686:16686", "4317:4317", "4318:4318"} <= set(services["jaeger"]["ports"])
    for i in (1, 2, 3):
        node = services[f"nats-{i}"]
        assert node["image"].startswith("nats:2.") and node["command"] == ["-c", "/etc/nats/cluster.conf"]
        assert conf_variables() <= set(node["environment"]), "a variable cluster.conf uses is not set"
        assert node["environment"]["NATS_SERVER_NAME"] == f"nats-{i}"
        routes = {node["environment"][f"NATS_ROUTE_{k}"] for k in (1, 2, 3)}
        assert routes == {f"nats://nats-{k}:6222" for k in (1, 2, 3)}
    for name in [*AGENT_PROCESSES, "task"]:
        service = services[name]
        assert service["build"] == {"context": "..", "dockerfile": "deploy/Dockerfile"}
        env = service["environment"]
        assert set(env) <= KNOWN_ENV, set(env) - KNOWN_ENV
        for url in env["NATS_URL"].split(","):
            assert re.fullmatch(r"nats://nats-[123]:4222", url)
        assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://jaeger:4318"
        password = re.fullmatch(r"\$\{(\w+)\}", env["NATS_PASSWORD"])
        assert (
            password
            and password.group(1) == password_variable(env["NATS_USER"])
            and password.group(1) in secrets
        )
        check_a2a_command(service["command"])
        user = env["NATS_USER"]  # the same user name on NATS and Redis
        assert env["REDIS_URL"] == f"redis://{user}:${{{redis_password_variable(user)}}}@redis:6379/0"
    redis = services["redis"]
    assert redis["command"][:3] == ["redis-server", "--aclfile", "/etc/redis/users.acl"]
    assert "./redis/users.acl:/etc/redis/users.acl:ro" in redis["volumes"]
    for name in AGENT_PROCESSES:
        assert services[name]["command"] == ["serve", AGENT_PROCESSES[name]]
        assert services[name]["environment"]["NATS_USER"] == name
    assert {password_variable(u) for u in USERS} <= set(secrets)


def test_kubernetes_manifests_match_the_code() -> None:
    docs = list(yaml.safe_load_all((DEPLOY / "k8s" / "a2a.yaml").read_text()))
    kinds = {(d["kind"], d["metadata"]["name"]) for d in docs}
    assert {("StatefulSet", "nats"), ("Service", "nats"), ("Job", "demo-task")} <= kinds
    assert {("Deployment", n) for n in [*AGENT_PROCESSES, "redis", "jaeger"]} <= kinds
    secrets = dotenv()
    nats = next(d for d in docs if d["kind"] == "StatefulSet")
    assert nats["spec"]["replicas"] == 3
    nats_env = {e["name"] for e in nats["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert (
        conf_variables() - {password_variable(u) for u in USERS} <= nats_env
    )  # passwords come from the Secret
    for doc in docs:
        if doc["kind"] not in ("Deployment", "Job") or doc["metadata"]["name"] in REDIS_AND_JAEGER:
            continue
        (container,) = doc["spec"]["template"]["spec"]["containers"]
        assert container["image"] == "a2a-runtime:dev"
        check_a2a_command(container["args"])
        env = {e["name"]: e for e in container["env"]}
        assert set(env) <= KNOWN_ENV | REDIS_PASSWORDS, set(env) - KNOWN_ENV - REDIS_PASSWORDS
        key = env["NATS_PASSWORD"]["valueFrom"]["secretKeyRef"]["key"]
        assert key == password_variable(env["NATS_USER"]["value"]) and key in secrets
        user, names = env["NATS_USER"]["value"], [e["name"] for e in container["env"]]
        variable = redis_password_variable(user)
        assert env["REDIS_URL"]["value"] == f"redis://{user}:$({variable})@redis:6379/0"
        assert env[variable]["valueFrom"]["secretKeyRef"] == {"name": "a2a-nats-passwords", "key": variable}
        assert names.index(variable) < names.index("REDIS_URL")  # $(VAR) expands earlier entries only
        if doc["kind"] == "Deployment":
            name = doc["metadata"]["name"]
            assert container["args"] == ["serve", AGENT_PROCESSES[name]]
            port = int(env["A2A_HEALTH_PORT"]["value"])
            assert container["ports"] == [{"name": "health", "containerPort": port}]
            assert container["livenessProbe"]["httpGet"] == {"path": "/livez", "port": "health"}
            assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}
    redis = next(d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == "redis")
    (server,) = redis["spec"]["template"]["spec"]["containers"]
    assert server["args"][:3] == ["redis-server", "--aclfile", "/etc/redis/users.acl"]
    assert server["volumeMounts"] == [{"name": "acl", "mountPath": "/etc/redis"}]
    volumes = redis["spec"]["template"]["spec"]["volumes"]
    assert volumes == [{"name": "acl", "configMap": {"name": "a2a-redis-acl"}}]
    kustomization = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())
    for path in [*kustomization["resources"], *kustomization["configMapGenerator"][0]["files"]]:
        assert (DEPLOY / path).is_file(), path


def check_load_command(argv: list[str]) -> argparse.Namespace:
    """``argv`` is the `a2a redis-config --load` command: it parses, and asks to load."""
    assert argv == LOAD_COMMAND
    args, unknown = build_parser().parse_known_args(argv)
    assert args.command == "redis-config" and unknown in ([], ["--load"])
    args.load = True
    return args


def test_the_admin_loads_the_redis_functions_before_agents_start() -> None:
    services = yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())["services"]
    init = services["redis-init"]
    check_load_command(init["command"])
    assert init["environment"] == {"REDIS_URL": "redis://admin:${A2A_REDIS_PASSWORD_ADMIN}@redis:6379/0"}
    assert init["depends_on"] == {"redis": {"condition": "service_started"}}
    assert init["build"] == {"context": "..", "dockerfile": "deploy/Dockerfile"}
    for name in AGENT_PROCESSES:
        assert services[name]["depends_on"]["redis-init"] == {"condition": "service_completed_successfully"}
    docs = list(yaml.safe_load_all((DEPLOY / "k8s" / "a2a.yaml").read_text()))
    job = next(d for d in docs if d["kind"] == "Job" and d["metadata"]["name"] == "redis-functions")
    (container,) = job["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "a2a-runtime:dev"
    check_load_command(container["args"])
    env = {e["name"]: e for e in container["env"]}
    assert env["REDIS_URL"]["value"] == "redis://admin:$(A2A_REDIS_PASSWORD_ADMIN)@redis:6379/0"
    secret = env["A2A_REDIS_PASSWORD_ADMIN"]["valueFrom"]["secretKeyRef"]
    assert secret == {"name": "a2a-nats-passwords", "key": "A2A_REDIS_PASSWORD_ADMIN"}
    assert [e["name"] for e in container["env"]] == ["A2A_REDIS_PASSWORD_ADMIN", "REDIS_URL"]


@pytest.mark.anyio
async def test_the_deployed_acl_lets_the_admin_load_the_functions_agents_then_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    secrets = dotenv()
    with RedisServer(acl_file=DEPLOY / "redis" / "users.acl") as server:

        def url(user: str) -> str:
            password = secrets[redis_password_variable(user)]
            return f"redis://{user}:{password}@{server.host}:{server.port}/0"

        planner = Registry.from_url(url("planner"), namespace="demo")
        honest = AgentProfile(agent_id="planner-1a2b3c4d", name="planner")
        try:
            with pytest.raises(Unavailable, match=r"redis-config .*--load"):
                await planner.register(honest)
            monkeypatch.setenv("REDIS_URL", url("admin"))  # as the init service has it
            args = check_load_command(LOAD_COMMAND)
            args.roster, args.client, args.out = str(ROSTER), None, None
            assert await anyio.to_thread.run_sync(cmd_redis_config, args) == 0
            await planner.register(honest)
            assert [p.agent_id for p in await planner.list_agents()] == [honest.agent_id]
        finally:
            await planner.aclose()


def test_redis_users_are_what_the_roster_generates_from_the_demo_passwords() -> None:
    secrets = dotenv()
    missing = sorted(REDIS_PASSWORDS - set(secrets))
    assert not missing, f"deploy/.env lacks {missing} (see deploy/redis/README.md)"
    expected = render_acl(Roster.load(ROSTER), "demo", passwords=secrets)
    assert (DEPLOY / "redis" / "users.acl").read_text() == expected, "regenerate with `a2a redis-config`"
    kustomization = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())
    generated = {g["name"]: g.get("files", []) for g in kustomization["configMapGenerator"]}
    assert generated.get("a2a-redis-acl") == ["redis/users.acl"]


def test_dockerfile_copies_what_exists_and_sets_known_variables() -> None:
    text = (DEPLOY / "Dockerfile").read_text()
    for source in re.findall(r"^COPY (\S+)", text, re.M):
        assert (ROOT / source).exists(), source
    assert set(re.findall(r"\b(A2A_[A-Z_]+)=", text)) <= KNOWN_ENV
    assert 'ENTRYPOINT ["a2a"]' in text and "/readyz" in text


# -- the cluster configuration, for real ------------------------------------------------


class ClusterNode(ServerProcess):
    """deploy/nats/cluster.conf as one node, everything else from environment variables."""

    name = "nats-node"
    scheme = "nats"

    def argv(self) -> list[str]:
        return [nats_server_binary(), "-c", str(CONF)]


def _cluster_nodes() -> list[ClusterNode]:
    passwords = {password_variable(u): f"{u}-test-pw" for u in USERS}
    nodes = [ClusterNode() for _ in range(3)]
    cluster_ports = [free_port() for _ in nodes]
    for i, node in enumerate(nodes):
        node.env = {
            **passwords,
            "NATS_PORT": str(node.port),
            "NATS_HTTP_PORT": str(free_port()),
            "NATS_SERVER_NAME": f"node-{i + 1}",
            "NATS_STORE_DIR": str(node.workdir / "jetstream"),
            "NATS_CLUSTER_PORT": str(cluster_ports[i]),
            **{f"NATS_ROUTE_{k + 1}": f"nats://127.0.0.1:{p}" for k, p in enumerate(cluster_ports)},
        }
    return nodes


@pytest.fixture(scope="module")
def cluster() -> Iterator[list[ClusterNode]]:
    for attempt in range(3):
        nodes = _cluster_nodes()
        try:
            for node in nodes:
                node.start()
        except ServerError as exc:
            for node in nodes:
                node.cleanup()
            # A port found free was taken before the node bound it (another test process
            # picks free ports too): the cluster starts again on new ones.
            if "address already in use" not in str(exc) or attempt == 2:
                raise
            continue
        break
    try:
        yield nodes
    finally:
        for node in nodes:
            node.cleanup()


def user_settings(nodes: list[ClusterNode], node: int, user: str, redis_url: str) -> Settings:
    return Settings(
        nats_url=nodes[node].url,
        redis_url=redis_url,
        namespace="demo",
        nats_user=user,
        nats_password=f"{user}-test-pw",
        heartbeat_interval=0.5,
        roster=str(ROSTER),
    )


@pytest.mark.anyio
@pytest.mark.integration
async def test_the_demo_runs_with_agents_spread_over_the_cluster_and_permissions_hold(
    cluster: list[ClusterNode], tmp_path: Path
) -> None:
    redis_passwords = {redis_password_variable(u): f"{u}-redis-test-pw" for u in REDIS_USERS}
    acl = tmp_path / "users.acl"
    acl.write_text(render_acl(Roster.load(ROSTER), "demo", passwords=redis_passwords))
    redis = RedisServer(acl_file=acl)

    def redis_url(user: str) -> str:  # every process connects as its own Redis user
        return f"redis://{user}:{user}-redis-test-pw@{redis.host}:{redis.port}/0"

    with redis:
        await load_functions(redis_url("admin"))  # as the deployment's redis-init does
        placement = {"planner": 0, "reader": 1, "writer": 2, "reviewer": 1, "scribe": 0, "docs": 2}
        workspace = make_workspace(tmp_path / "workspace")
        procs = []
        for name, node in placement.items():
            s = user_settings(cluster, node, name, redis_url(name))
            procs.append(
                AgentProcess(
                    s,
                    AGENT_PROCESSES[name],
                    NATS_USER=name,
                    NATS_PASSWORD=s.nats_password or "",
                    A2A_ROSTER=str(ROSTER),
                    A2A_DEMO_WORKSPACE=str(workspace),
                ).start()
            )
        try:
            client = Settings(
                **{**_fields(user_settings(cluster, 2, "client", redis_url("client"))), "client_name": "user"}
            )
            with anyio.fail_after(60):
                result, records, _ = await _drive(client, str(workspace))
            assert result["status"] == "done"
            hops = {(r.origin, r.target, r.outcome) for r in records}
            assert {
                ("planner", "reader", "ok"),
                ("planner", "writer", "ok"),
                ("writer", "reader", "ok"),
                ("reviewer", "writer", "ok"),  # the fix the first review asked for
                ("planner", "docs", "ok"),
                ("planner", "scribe", "ok"),
                ("scribe", "reader", "ok"),
            } <= hops
            # The reviewer's NATS user may not publish to the planner, whatever its runtime's policy says.
            rogue = user_settings(cluster, 0, "reviewer", redis_url("reviewer"))
            async with Runtime(rogue, policy=Policy()) as rt:
                start = time.monotonic()
                with pytest.raises(PermissionDenied) as info:
                    await rt.call("planner", "replan", {"reason": "bypass"}, timeout=20)
                assert time.monotonic() - start < 2.0
                assert info.value.details["subject"] == "a2a.demo.agent.planner.reviewer"
        finally:
            for proc in procs:
                output = proc.output()
                proc.terminate()
                proc.__exit__(None, None, None)
                assert "Traceback" not in output, output[-3000:]


def _fields(settings: Settings) -> dict[str, Any]:
    return {f: getattr(settings, f) for f in settings.__struct_fields__}
