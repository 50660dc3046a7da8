"""Who calls: bearer tokens checked against a shared secret, a PEM public key or a JWKS file.

The token's subject becomes the bus call's user (the ``whoami`` action of ``slow`` says
which) and the owner of the task.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from a2a import Settings
from a2a.gateway import Authenticator, JwtConfig

from .conftest import AGENTS, V1, Gateway, action, gateway_on, message, runtime_serving

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

AUDIENCE = "a2a-gateway"
ISSUER = "https://issuer.example"
SECRET = "s3cret-" + "x" * 60
OTHER_SECRET = "other-" + "y" * 40


@dataclass(frozen=True)
class Keys:
    rsa1: rsa.RSAPrivateKey
    rsa2: rsa.RSAPrivateKey
    stranger: rsa.RSAPrivateKey
    ec: ec.EllipticCurvePrivateKey


@pytest.fixture(scope="module")
def keys() -> Keys:
    def new_rsa() -> rsa.RSAPrivateKey:
        return rsa.generate_private_key(public_exponent=65537, key_size=2048)

    return Keys(new_rsa(), new_rsa(), new_rsa(), ec.generate_private_key(ec.SECP256R1()))


def pem(key: rsa.RSAPrivateKey) -> str:
    return (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )


def jwk(key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey, kid: str | None) -> dict[str, Any]:
    if isinstance(key, rsa.RSAPrivateKey):
        out = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
        out["alg"] = "RS256"
    else:
        out = json.loads(jwt.algorithms.ECAlgorithm.to_jwk(key.public_key()))
        out["alg"] = "ES256"
    if kid is not None:
        out["kid"] = kid
    return dict(out)


def claims(**overrides: Any) -> dict[str, Any]:
    now = int(time.time())
    base: dict[str, Any] = {"sub": "carol", "aud": AUDIENCE, "iss": ISSUER, "iat": now, "exp": now + 300}
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not None}


def unsigned(payload: dict[str, Any]) -> str:
    def part(obj: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part(payload)}."


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def gateways(
    nats_url: str, redis_url: str, keys: Keys, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[dict[str, Gateway]]:
    """Three gateways on one bus: HS256 secret (and API keys), RSA PEM key, JWKS of two keys."""
    files = tmp_path_factory.mktemp("auth")
    (files / "secret").write_text(SECRET + "\n")
    (files / "key.pem").write_text(pem(keys.rsa1))
    (files / "jwks.json").write_text(json.dumps({"keys": [jwk(keys.rsa1, "k1"), jwk(keys.rsa2, "k2")]}))
    (files / "api-keys.yaml").write_text("alice: key-of-alice\n")
    configs = {
        "secret": (
            JwtConfig(secret_file=files / "secret", audience=AUDIENCE, issuer=ISSUER),
            files / "api-keys.yaml",
        ),
        "pem": (JwtConfig(key_file=files / "key.pem", audience=AUDIENCE), None),
        "jwks": (JwtConfig(jwks_file=files / "jwks.json"), None),
    }
    settings = Settings(
        nats_url=nats_url,
        redis_url=redis_url,
        namespace="t" + uuid.uuid4().hex[:10],
        heartbeat_interval=0.25,
        default_timeout=10.0,
    )
    async with AsyncExitStack() as stack:
        await stack.enter_async_context(runtime_serving(settings, *AGENTS))
        found = {}
        for name, (config, api_keys) in configs.items():
            runtime = await stack.enter_async_context(runtime_serving(settings, wait_for=["slow"]))
            auth = Authenticator.from_files(api_keys, config)
            found[name] = await stack.enter_async_context(gateway_on(runtime, auth=auth))
        yield found


async def whoami(gw: Gateway, headers: dict[str, str]) -> Any:
    r = await gw.client.post(
        "/agents/slow/message:send", json={"message": message(action("whoami"))}, headers={**V1, **headers}
    )
    return r


Token = Callable[[Keys], str]

ACCEPTED: list[tuple[str, str, Token, str]] = [
    ("hs256", "secret", lambda k: jwt.encode(claims(), SECRET, "HS256"), "carol"),
    (
        "hs512",
        "secret",
        lambda k: jwt.encode(claims(sub="dave@example.com"), SECRET, "HS512"),
        "dave@example.com",
    ),
    (
        "expired-within-leeway",
        "secret",
        lambda k: jwt.encode(claims(exp=int(time.time()) - 5), SECRET, "HS256"),
        "carol",
    ),
    ("rs256-pem", "pem", lambda k: jwt.encode(claims(iss=None), k.rsa1, "RS256"), "carol"),
    (
        "jwks-kid-1",
        "jwks",
        lambda k: jwt.encode(claims(aud=None), k.rsa1, "RS256", headers={"kid": "k1"}),
        "carol",
    ),
    (
        "jwks-kid-2",
        "jwks",
        lambda k: jwt.encode(claims(sub="erin"), k.rsa2, "RS256", headers={"kid": "k2"}),
        "erin",
    ),
    ("jwks-no-kid", "jwks", lambda k: jwt.encode(claims(), k.rsa2, "RS256"), "carol"),
]


@pytest.mark.parametrize(
    ("gateway_name", "token", "user"), [pytest.param(*case[1:], id=case[0]) for case in ACCEPTED]
)
async def test_a_valid_token_names_the_user(
    gateways: dict[str, Gateway], keys: Keys, gateway_name: str, token: Token, user: str
) -> None:
    r = await whoami(gateways[gateway_name], bearer(token(keys)))
    assert r.status_code == 200, r.text
    task = r.json()["task"]
    assert task["artifacts"][0]["parts"][0]["data"]["user"] == user


REJECTED: list[tuple[str, str, Token]] = [
    ("expired", "secret", lambda k: jwt.encode(claims(exp=int(time.time()) - 120), SECRET, "HS256")),
    ("no-exp", "secret", lambda k: jwt.encode(claims(exp=None), SECRET, "HS256")),
    ("not-yet-valid", "secret", lambda k: jwt.encode(claims(nbf=int(time.time()) + 600), SECRET, "HS256")),
    ("wrong-audience", "secret", lambda k: jwt.encode(claims(aud="someone-else"), SECRET, "HS256")),
    ("no-audience", "secret", lambda k: jwt.encode(claims(aud=None), SECRET, "HS256")),
    ("wrong-issuer", "secret", lambda k: jwt.encode(claims(iss="https://evil.example"), SECRET, "HS256")),
    ("wrong-secret", "secret", lambda k: jwt.encode(claims(), OTHER_SECRET, "HS256")),
    ("alg-none", "secret", lambda k: unsigned(claims())),
    ("alg-none-pem", "pem", lambda k: unsigned(claims())),
    ("alg-none-jwks", "jwks", lambda k: unsigned(claims())),
    ("sub-with-spaces", "secret", lambda k: jwt.encode(claims(sub="carol smith"), SECRET, "HS256")),
    ("sub-empty", "secret", lambda k: jwt.encode(claims(sub=""), SECRET, "HS256")),
    ("no-sub", "secret", lambda k: jwt.encode(claims(sub=None), SECRET, "HS256")),
    ("rs256-on-secret", "secret", lambda k: jwt.encode(claims(), k.rsa1, "RS256")),
    ("tampered-payload", "secret", lambda k: tamper(jwt.encode(claims(), SECRET, "HS256"))),
    ("wrong-key-pem", "pem", lambda k: jwt.encode(claims(), k.stranger, "RS256")),
    ("hs256-with-the-public-key", "pem", lambda k: hs_with_public_key(k)),
    ("wrong-audience-pem", "pem", lambda k: jwt.encode(claims(aud="other"), k.rsa1, "RS256")),
    ("jwks-wrong-kid", "jwks", lambda k: jwt.encode(claims(), k.rsa1, "RS256", headers={"kid": "k2"})),
    ("jwks-unknown-kid", "jwks", lambda k: jwt.encode(claims(), k.rsa1, "RS256", headers={"kid": "k9"})),
    ("jwks-stranger", "jwks", lambda k: jwt.encode(claims(), k.stranger, "RS256")),
    ("jwks-hs256", "jwks", lambda k: jwt.encode(claims(), SECRET, "HS256", headers={"kid": "k1"})),
    ("garbage", "secret", lambda k: "not.a.token"),
    ("too-long", "secret", lambda k: jwt.encode(claims(pad="p" * 9000), SECRET, "HS256")),
]


def tamper(token: str) -> str:
    header, payload, signature = token.split(".")
    body = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    body["sub"] = "mallory"
    forged = base64.urlsafe_b64encode(json.dumps(body).encode()).decode().rstrip("=")
    return f"{header}.{forged}.{signature}"


def hs_with_public_key(k: Keys) -> str:
    """The classic confusion: an HMAC token keyed with the server's public key (PyJWT refuses to make one)."""
    header = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=")
    payload = base64.urlsafe_b64encode(json.dumps(claims()).encode()).decode().rstrip("=")
    mac = hmac.new(pem(k.rsa1).encode(), f"{header}.{payload}".encode(), hashlib.sha256).digest()
    return f"{header}.{payload}.{base64.urlsafe_b64encode(mac).decode().rstrip('=')}"


@pytest.mark.parametrize(
    ("gateway_name", "token"), [pytest.param(*case[1:], id=case[0]) for case in REJECTED]
)
async def test_a_bad_token_is_401(
    gateways: dict[str, Gateway], keys: Keys, gateway_name: str, token: Token
) -> None:
    gw = gateways[gateway_name]
    r = await whoami(gw, bearer(token(keys)))
    assert r.status_code == 401, r.text
    error = r.json()["error"]
    assert error["status"] == "UNAUTHENTICATED" and error["message"].startswith("invalid bearer token")
    assert "Bearer" in r.headers["www-authenticate"]
    rpc = await gw.client.post(
        "/",
        json={"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}},
        headers={**V1, **bearer(token(keys))},
    )
    assert rpc.status_code == 401


@pytest.mark.parametrize(
    "authorization", ["", "Bearer", "Basic Y2Fyb2w6cHc=", "bearer", "Token abc"], ids=repr
)
async def test_no_usable_credentials_is_401(gateways: dict[str, Gateway], authorization: str) -> None:
    r = await whoami(gateways["secret"], {"Authorization": authorization} if authorization else {})
    assert r.status_code == 401
    assert r.json()["error"]["message"].startswith("authentication required")


async def test_api_keys_and_tokens_work_side_by_side(gateways: dict[str, Gateway]) -> None:
    gw = gateways["secret"]
    by_key = await whoami(gw, {"X-API-Key": "key-of-alice"})
    assert by_key.json()["task"]["artifacts"][0]["parts"][0]["data"]["user"] == "alice"
    # A wrong API key is not rescued by a good token next to it.
    both = await whoami(gw, {"X-API-Key": "wrong", **bearer(jwt.encode(claims(), SECRET, "HS256"))})
    assert both.status_code == 401
    card = (await gw.client.get("/.well-known/agent-card.json")).json()
    assert set(card["securitySchemes"]) == {"apiKey", "bearer"}
    assert card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["bearerFormat"] == "JWT"


async def test_the_token_subject_owns_the_task(gateways: dict[str, Gateway]) -> None:
    gw = gateways["secret"]
    carol = bearer(jwt.encode(claims(sub="carol-2"), SECRET, "HS256"))
    dave = bearer(jwt.encode(claims(sub="dave-2"), SECRET, "HS256"))
    task = (await whoami(gw, carol)).json()["task"]
    assert (await gw.get_task(task["id"], headers=carol)).status_code == 200
    assert (await gw.get_task(task["id"], headers=dave)).status_code == 404
    assert (await gw.list_tasks(headers=dave))["tasks"] == []
    # A context id is scoped to its user: the same id is another conversation for another user.
    r = await gw.client.post(
        "/agents/slow/message:send",
        json={"message": message(action("whoami"), contextId=task["contextId"])},
        headers={**V1, **dave},
    )
    assert r.status_code == 200
    theirs = r.json()["task"]
    assert theirs["status"]["state"] == "TASK_STATE_COMPLETED"
    carols = task["artifacts"][0]["parts"][0]["data"]["conversation"]
    daves = theirs["artifacts"][0]["parts"][0]["data"]["conversation"]
    assert carols != daves and carols.endswith(task["contextId"]) and daves.endswith(task["contextId"])


def test_jwt_configuration_errors_name_the_file(tmp_path: Path) -> None:
    short = tmp_path / "short"
    short.write_text("too short")
    with pytest.raises(ValueError, match="32 characters"):
        Authenticator.from_files(jwt_config=JwtConfig(secret_file=short))
    with pytest.raises(ValueError, match="exactly one"):
        Authenticator.from_files(jwt_config=JwtConfig(secret_file=short, key_file=short))
    with pytest.raises(ValueError, match="missing"):
        Authenticator.from_files(jwt_config=JwtConfig(key_file=tmp_path / "missing"))
    junk = tmp_path / "jwks.json"
    junk.write_text('{"keys": "nope"}')
    with pytest.raises(ValueError, match=str(junk)):
        Authenticator.from_files(jwt_config=JwtConfig(jwks_file=junk))


def test_a_token_without_kid_finds_its_key_among_keys_of_other_types(keys: Keys, tmp_path: Path) -> None:
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps({"keys": [jwk(keys.ec, "e1"), jwk(keys.rsa1, "r1")]}))
    auth = Authenticator.from_files(jwt_config=JwtConfig(jwks_file=jwks))
    token = jwt.encode(claims(), keys.rsa1, "RS256")
    assert auth.principal({"authorization": f"Bearer {token}"}) == "carol"
