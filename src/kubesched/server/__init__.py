"""The secure port of `kubesched run`: health checks, /metrics, TLS and the
delegated authentication and authorization in front of them (server.health,
server.auth, server.tls).

Nothing is imported here: the API worker imports server.memfile alone, without the
HTTP server (aiohttp.web, prometheus_client) that server.health brings."""
