"""The secure port of `kubesched run`: health checks, /metrics, TLS and the
delegated authentication and authorization in front of them."""

from kubesched.server.health import Check, CheckFailed, Handler, HealthServer

__all__ = ["Check", "CheckFailed", "Handler", "HealthServer"]
