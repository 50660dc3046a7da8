"""The A2A HTTP gateway: bus agents served to any A2A client (protocol 1.0, and 0.3 method names).

    async with Runtime(settings) as runtime:
        await serve_gateway(runtime, port=8080, auth=Authenticator.from_files(Path("keys.yaml")))

See :mod:`a2a.gateway.mapping` for how A2A messages become bus calls.
"""

from .app import create_app as create_app
from .app import serve_gateway as serve_gateway
from .auth import Authenticator as Authenticator
from .auth import JwtConfig as JwtConfig
from .config import GatewayConfig as GatewayConfig
from .signing import CardSigner as CardSigner

__all__ = ["Authenticator", "CardSigner", "GatewayConfig", "JwtConfig", "create_app", "serve_gateway"]
