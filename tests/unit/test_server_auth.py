"""The secure port's filter: delegated authentication and authorization, with caches."""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import Awaitable, Callable

import aiohttp
import pytest

from kubesched.server.auth import (
    AuthorizationDecision,
    CachedPathAuthorizer,
    CachedTokenAuthenticator,
    RequestGuard,
    UserInfo,
    always_allow_path_matcher,
)
from kubesched.server.health import HealthServer
from kubesched.server.metrics import SchedulerMetrics
from kubesched.server.tls import self_signed_serving_certificate, server_ssl_context

READER = UserInfo("system:serviceaccount:monitoring:prometheus", groups=("system:authenticated",))
NOBODY = UserInfo("system:serviceaccount:default:nobody", groups=("system:authenticated",))
ADMIN = UserInfo("admin", groups=("system:masters", "system:authenticated"))


class FakeTokenReview:
    def __init__(self) -> None:
        self.users = {"reader": READER, "nobody": NOBODY, "admin": ADMIN}
        self.calls: list[str] = []
        self.fail = False

    async def authenticate_token(self, token: str) -> UserInfo | None:
        self.calls.append(token)
        if self.fail:
            raise ConnectionError("apiserver down")
        return self.users.get(token)


class FakeAccessReview:
    """Allows READER to get /metrics."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str]] = []

    async def authorize(self, user: UserInfo, verb: str, path: str) -> AuthorizationDecision:
        self.calls.append((user.name, verb, path))
        if user == READER and verb == "get" and path == "/metrics":
            return AuthorizationDecision(True)
        return AuthorizationDecision(False, "")


Get = Callable[..., Awaitable[tuple[int, str]]]


def serve(
    guard: RequestGuard,
    body: Callable[[Get], Awaitable[None]],
    ssl_context: ssl.SSLContext | None = None,
) -> None:
    server = HealthServer(SchedulerMetrics(), "127.0.0.1", 0, ssl_context=ssl_context, guard=guard)

    async def main() -> None:
        await server.start()
        scheme = "https" if ssl_context is not None else "http"
        try:
            async with aiohttp.ClientSession() as session:

                async def get(path: str, token: str | None = None) -> tuple[int, str]:
                    headers = {"Authorization": f"Bearer {token}"} if token else {}
                    url = f"{scheme}://127.0.0.1:{server.port}{path}"
                    async with session.get(url, headers=headers, ssl=False) as resp:
                        return resp.status, await resp.text()

                await body(get)
        finally:
            await server.stop()

    asyncio.run(main())


def test_metrics_need_a_token_allowed_to_get_the_path() -> None:
    reviews, access = FakeTokenReview(), FakeAccessReview()
    guard = RequestGuard(reviews, access)

    async def body(get: Get) -> None:
        # No token: system:anonymous, which may not get /metrics.
        status, text = await get("/metrics")
        assert status == 403
        assert json.loads(text) == {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": 'forbidden: User "system:anonymous" cannot get path "/metrics"',
            "reason": "Forbidden",
            "details": {},
            "code": 403,
        }
        # A token the TokenReview does not know: 401.
        status, text = await get("/metrics", "forged")
        assert status == 401
        assert json.loads(text)["message"] == "Unauthorized"
        # Known, but not allowed: 403 naming the user.
        status, text = await get("/metrics", "nobody")
        assert status == 403
        assert json.loads(text)["message"] == (
            f'forbidden: User "{NOBODY.name}" cannot get path "/metrics"'
        )
        # Allowed.
        status, text = await get("/metrics", "reader")
        assert status == 200
        assert "# TYPE scheduler_pending_pods gauge" in text
        # system:masters needs no SubjectAccessReview.
        before = len(access.calls)
        assert (await get("/metrics", "admin"))[0] == 200
        assert len(access.calls) == before
        # The health paths are always allowed, even to anonymous; exactly those
        # paths: a single check's path is asked of the authorizer.
        for path in ("/healthz", "/livez", "/readyz"):
            assert await get(path) == (200, "ok"), path
        assert (await get("/readyz/ping"))[0] == 403
        assert (await get("/readyz/ping", "admin")) == (200, "ok")
        # ... but a bad token is still refused there (authentication comes first).
        assert (await get("/healthz", "forged"))[0] == 401

    serve(guard, body)


def test_review_failures_are_not_cached_and_refuse() -> None:
    reviews, access = FakeTokenReview(), FakeAccessReview()
    guard = RequestGuard(CachedTokenAuthenticator(reviews), CachedPathAuthorizer(access))

    async def body(get: Get) -> None:
        reviews.fail = True
        assert (await get("/metrics", "reader"))[0] == 401
        reviews.fail = False
        assert (await get("/metrics", "reader"))[0] == 200
        assert reviews.calls == ["reader", "reader"]

    serve(guard, body)


def test_answers_are_cached_for_their_ttl() -> None:
    now = [0.0]
    reviews, access = FakeTokenReview(), FakeAccessReview()
    authn = CachedTokenAuthenticator(reviews, ttl=10.0, clock=lambda: now[0])
    authz = CachedPathAuthorizer(access, allowed_ttl=10.0, denied_ttl=5.0, clock=lambda: now[0])

    async def main() -> None:
        for _ in range(3):
            assert await authn.authenticate_token("reader") == READER
            assert await authn.authenticate_token("forged") is None
            assert (await authz.authorize(READER, "get", "/metrics")).allowed
            assert not (await authz.authorize(NOBODY, "get", "/metrics")).allowed
        assert reviews.calls == ["reader", "forged"]
        assert len(access.calls) == 2
        now[0] = 6.0  # denials expire first
        assert not (await authz.authorize(NOBODY, "get", "/metrics")).allowed
        assert (await authz.authorize(READER, "get", "/metrics")).allowed
        assert len(access.calls) == 3
        now[0] = 10.0
        assert await authn.authenticate_token("reader") == READER
        assert (await authz.authorize(READER, "get", "/metrics")).allowed
        assert reviews.calls == ["reader", "forged", "reader"]
        assert len(access.calls) == 4

    asyncio.run(main())


def test_always_allow_paths() -> None:
    allowed = always_allow_path_matcher(["/healthz", "/debug/*", " "])
    assert allowed("/healthz") and allowed("/debug/pprof") and allowed("/debug/")
    assert not allowed("/healthz/ping") and not allowed("/metrics") and not allowed("/debug")
    with pytest.raises(ValueError, match=r"only trailing \* allowed in '/a\*/b'"):
        always_allow_path_matcher(["/a*/b"])


def test_https_with_a_self_signed_certificate_made_in_memory() -> None:
    cert, key = self_signed_serving_certificate("localhost", ["127.0.0.1"])
    assert cert.count(b"BEGIN CERTIFICATE") == 2  # the serving certificate, then its CA
    guard = RequestGuard(FakeTokenReview(), FakeAccessReview())

    async def body(get: Get) -> None:
        assert await get("/healthz") == (200, "ok")

    serve(guard, body, server_ssl_context(cert, key))
