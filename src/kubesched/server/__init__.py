"""The secure port of `kubesched run`: health checks, /metrics, TLS and the
delegated authentication and authorization in front of them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kubesched.server.health import Check, CheckFailed, Handler, HealthServer

__all__ = ["Check", "CheckFailed", "Handler", "HealthServer"]


def __getattr__(name: str) -> Any:
    # Lazy: the API worker imports server.memfile only, not the HTTP server (aiohttp.web,
    # prometheus_client) that importing this package would otherwise bring.
    if name in __all__:
        from kubesched.server import health

        return getattr(health, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
