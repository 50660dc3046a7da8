"""``a2a gateway``: serve the bus's agents to A2A clients over HTTP."""

from __future__ import annotations

import argparse
import logging
import signal
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from .common import CommandError, seconds, settings_from, subject_token

if TYPE_CHECKING:
    from ..core.settings import Settings

__all__ = ["add_gateway_parser", "cmd_gateway"]


def add_gateway_parser(
    sub: Any,
    parents: Sequence[argparse.ArgumentParser],
    connection_options: object,
) -> None:
    p = sub.add_parser(
        "gateway",
        parents=parents,
        help="serve the bus's agents to A2A clients (HTTP, A2A protocol 1.0 and 0.3)",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8080, help="port (default 8080; 0 picks a free one)")
    p.add_argument(
        "--public-url",
        help="base URL clients reach the gateway at, written into agent cards (default: the bound address)",
    )
    p.add_argument(
        "--default-agent",
        metavar="NAME",
        type=subject_token("agent"),
        help="the agent that takes a message sent to the gateway's own URL when it names no skill "
        "(metadata.skillId) and no agent, as if sent to /agents/NAME (default: the only live "
        "agent, if exactly one is; else such a message is refused)",
    )
    p.add_argument(
        "--origin-card",
        choices=("gateway", "agent"),
        default="gateway",
        help="what /.well-known/agent-card.json is: 'gateway' (default), one skill per capability "
        "with the routing rule in its description; 'agent', the --default-agent's own card at the "
        "gateway's URL, for clients that only read the origin's card",
    )
    p.add_argument("--api-keys", type=Path, help="YAML file: user -> API key(s) (clear or sha256:<hex>)")
    p.add_argument("--jwt-key", type=Path, help="PEM public key that signs bearer JWTs")
    p.add_argument("--jwt-secret", type=Path, help="file holding the HMAC secret of bearer JWTs")
    p.add_argument("--jwks", type=Path, help="JWKS file with the keys that sign bearer JWTs")
    p.add_argument("--jwt-audience", help="required 'aud' of bearer JWTs")
    p.add_argument("--jwt-issuer", help="required 'iss' of bearer JWTs")
    p.add_argument(
        "--card-key",
        type=Path,
        metavar="PEM",
        help="unencrypted PEM private key that signs every agent card served (a detached JWS in "
        "'signatures': EC P-256/384/521 -> ES256/384/512, Ed25519 -> EdDSA, RSA -> RS256); its public "
        "key is served as a JWKS at /.well-known/jwks.json, named by the signatures' 'jku'",
    )
    p.add_argument(
        "--card-key-id",
        metavar="KID",
        help="the 'kid' of the card signatures (default: the key's RFC 7638 thumbprint)",
    )
    p.add_argument(
        "--timeout", type=seconds, default=60.0, help="a call's deadline when the client gives none"
    )
    p.add_argument("--max-timeout", type=seconds, default=600.0, help="the most a client may ask for")
    p.add_argument(
        "--replica-ttl",
        type=seconds,
        default=15.0,
        help="seconds without a heartbeat after which another replica counts this one gone "
        "(and fails, or with durable tasks adopts, the tasks it ran)",
    )
    p.add_argument(
        "--header-timeout",
        type=seconds,
        default=10.0,
        help="seconds a request's head may take to arrive (default 10)",
    )
    p.add_argument(
        "--body-timeout",
        type=seconds,
        default=60.0,
        help="seconds a request's body may take to arrive after its head (default 60)",
    )
    p.add_argument(
        "--push-allow-private",
        action="store_true",
        help="let push-notification URLs name private, loopback and link-local addresses "
        "(refused by default: a client could otherwise reach services only the gateway can)",
    )
    p.add_argument(
        "--push-allow-cidr",
        action="append",
        default=[],
        metavar="CIDR",
        help="a network push-notification URLs may name although it is not public (repeatable)",
    )
    assert callable(connection_options)
    connection_options(p)
    p.set_defaults(func=cmd_gateway)


def cmd_gateway(args: argparse.Namespace) -> int:
    from ..core.runtime import Runtime
    from ..gateway import Authenticator, CardSigner, GatewayConfig, JwtConfig, serve_gateway

    if not 0 <= args.port <= 65535:
        raise CommandError("--port must be between 0 and 65535", status=2)
    if args.origin_card == "agent" and args.default_agent is None:
        raise CommandError("--origin-card agent serves the --default-agent's card: name one", status=2)
    if args.card_key_id is not None and args.card_key is None:
        raise CommandError("--card-key-id names the key of --card-key: give one", status=2)
    settings = settings_from(args)
    # ValueError: exit 2, naming the file
    signer = CardSigner.from_file(args.card_key, args.card_key_id) if args.card_key else None
    jwt = None
    if args.jwt_key or args.jwt_secret or args.jwks:
        jwt = JwtConfig(
            key_file=args.jwt_key,
            secret_file=args.jwt_secret,
            jwks_file=args.jwks,
            audience=args.jwt_audience,
            issuer=args.jwt_issuer,
        )
    auth = Authenticator.from_files(args.api_keys, jwt)  # ValueError: exit 2, naming the file
    if auth.open:
        logging.getLogger("a2a").warning(
            "no --api-keys or JWT key: the gateway is open and every request acts for 'anonymous'"
        )
    config = GatewayConfig(
        public_url=args.public_url,
        default_timeout=args.timeout,
        max_timeout=args.max_timeout,
        replica_ttl=args.replica_ttl,
        header_timeout=args.header_timeout,
        body_timeout=args.body_timeout,
        default_agent=args.default_agent,
        origin_card=args.origin_card,
        push_allow_private=args.push_allow_private,
        push_allow_cidrs=tuple(args.push_allow_cidr),
    )

    async def run(settings: Settings) -> None:
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async with Runtime(settings) as runtime, anyio.create_task_group() as tg:
                port = await tg.start(
                    lambda task_status: serve_gateway(
                        runtime,
                        host=args.host,
                        port=args.port,
                        config=config,
                        auth=auth,
                        card_signer=signer,
                        task_status=task_status,
                    )
                )
                print(
                    f"A2A gateway on http://{args.host}:{port}/ (card: /.well-known/agent-card.json)",
                    flush=True,
                )
                async for _ in signals:
                    break
                tg.cancel_scope.cancel()

    anyio.run(run, settings)
    return 0
