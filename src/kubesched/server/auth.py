"""Who may read the secure port: delegated authentication and authorization.

kube-scheduler puts its endpoints behind the generic apiserver's handler chain
(buildHandlerChain in cmd/kube-scheduler/app/server.go) with a delegating
authenticator and authorizer (k8s.io/apiserver/pkg/server/options
DelegatingAuthenticationOptions / DelegatingAuthorizationOptions):

* a bearer token is checked by a TokenReview; a request without one is
  ``system:anonymous`` (group ``system:unauthenticated``); a token the review
  rejects, or a review that fails, answers 401 ``Unauthorized``;
* the ``system:masters`` group and the always-allowed paths (default
  ``/healthz``, ``/readyz``, ``/livez``; a trailing ``*`` matches a prefix) pass;
  any other request is asked of a SubjectAccessReview (non-resource: the path and
  the lower-cased method as verb). A refusal answers 403 ``forbidden: User "x"
  cannot get path "/metrics"``; a review that fails answers 500.
* answers are cached as the delegating options do: tokens 10 s (both
  verdicts), authorizations 10 s allowed and 10 s denied; errors are not cached.

The reviews themselves are asked by the caller's TokenAuthenticator and
PathAuthorizer (kubesched.kube.delegated_auth talks to the API server).
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from aiohttp import web

from kubesched.logs import V, kv

__all__ = [
    "ALWAYS_ALLOW_GROUPS",
    "ALWAYS_ALLOW_PATHS",
    "ANONYMOUS",
    "AuthorizationDecision",
    "CachedPathAuthorizer",
    "CachedTokenAuthenticator",
    "PathAuthorizer",
    "RequestGuard",
    "TokenAuthenticator",
    "UserInfo",
    "always_allow_path_matcher",
]

log = logging.getLogger("kubesched.server.auth")

# DelegatingAuthorizationOptions' defaults.
ALWAYS_ALLOW_PATHS = ("/healthz", "/readyz", "/livez")
ALWAYS_ALLOW_GROUPS = ("system:masters",)
# DelegatingAuthenticationOptions.CacheTTL; DelegatingAuthorizationOptions'
# AllowCacheTTL and DenyCacheTTL.
TOKEN_CACHE_TTL = 10.0
AUTHORIZED_CACHE_TTL = 10.0
UNAUTHORIZED_CACHE_TTL = 10.0
# The webhook authorizer's LRU holds 1024 answers; the token cache is bounded too.
CACHE_SIZE = 1024


@dataclass(frozen=True)
class UserInfo:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


# The anonymous authenticator's user (k8s.io/apiserver/pkg/authentication/request/anonymous).
ANONYMOUS = UserInfo("system:anonymous", groups=("system:unauthenticated",))


@dataclass(frozen=True)
class AuthorizationDecision:
    allowed: bool
    reason: str = ""


class TokenAuthenticator(Protocol):
    async def authenticate_token(self, token: str) -> UserInfo | None:
        """The token's user, None when the token is not valid; raises when it cannot tell."""
        ...


class PathAuthorizer(Protocol):
    async def authorize(self, user: UserInfo, verb: str, path: str) -> AuthorizationDecision:
        """May USER do VERB on the non-resource PATH? Raises when it cannot tell."""
        ...


K = TypeVar("K")
T = TypeVar("T")


class _TtlCache(Generic[K, T]):
    """Answers kept for a while, the oldest dropped beyond CACHE_SIZE."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._entries: dict[K, tuple[float, T]] = {}

    def get(self, key: K) -> tuple[bool, T | None]:
        entry = self._entries.get(key)
        if entry is None:
            return False, None
        expires, value = entry
        if self._clock() >= expires:
            del self._entries[key]
            return False, None
        return True, value

    def put(self, key: K, value: T, ttl: float) -> None:
        if ttl <= 0:
            return
        self._entries.pop(key, None)
        self._entries[key] = (self._clock() + ttl, value)
        while len(self._entries) > CACHE_SIZE:
            del self._entries[next(iter(self._entries))]


class CachedTokenAuthenticator:
    """A TokenAuthenticator whose verdicts are kept TTL seconds (cache.New in
    k8s.io/apiserver/pkg/authentication/token/cache, success and failure alike);
    tokens are keyed by their digest, never kept."""

    def __init__(
        self,
        inner: TokenAuthenticator,
        ttl: float = TOKEN_CACHE_TTL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.inner = inner
        self.ttl = ttl
        self._cache: _TtlCache[bytes, UserInfo | None] = _TtlCache(clock)

    async def authenticate_token(self, token: str) -> UserInfo | None:
        key = hashlib.sha256(token.encode()).digest()
        hit, user = self._cache.get(key)
        if hit:
            return user
        user = await self.inner.authenticate_token(token)
        self._cache.put(key, user, self.ttl)
        return user


class CachedPathAuthorizer:
    """A PathAuthorizer whose answers are kept ALLOWED_TTL / DENIED_TTL seconds
    (the webhook authorizer's responseCache)."""

    def __init__(
        self,
        inner: PathAuthorizer,
        allowed_ttl: float = AUTHORIZED_CACHE_TTL,
        denied_ttl: float = UNAUTHORIZED_CACHE_TTL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.inner = inner
        self.allowed_ttl = allowed_ttl
        self.denied_ttl = denied_ttl
        self._cache: _TtlCache[str, AuthorizationDecision] = _TtlCache(clock)

    async def authorize(self, user: UserInfo, verb: str, path: str) -> AuthorizationDecision:
        key = json.dumps(
            [user.name, user.uid, sorted(user.groups), sorted(user.extra.items()), verb, path]
        )
        hit, decision = self._cache.get(key)
        if hit and decision is not None:
            return decision
        decision = await self.inner.authorize(user, verb, path)
        self._cache.put(key, decision, self.allowed_ttl if decision.allowed else self.denied_ttl)
        return decision


def always_allow_path_matcher(paths: Iterable[str]) -> Callable[[str], bool]:
    """NewAuthorizer of k8s.io/apiserver/pkg/authorization/path: exact paths, or
    prefixes with a trailing ``*``. Raises ValueError for a ``*`` elsewhere."""
    exact: set[str] = set()
    prefixes: list[str] = []
    for raw in paths:
        path = raw.strip()
        if not path:
            continue
        if "*" in path:
            if not path.endswith("*") or "*" in path[:-1]:
                raise ValueError(f"only trailing * allowed in {path!r}")
            prefixes.append(path[:-1])
        else:
            exact.add(path)
    return lambda path: path in exact or any(path.startswith(p) for p in prefixes)


def _status(code: int, reason: str, message: str) -> web.Response:
    """A metav1.Status body, as responsewriters.ErrorNegotiated writes it."""
    status: dict[str, object] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
    }
    if code == 403:
        status["details"] = {}
    status["code"] = code
    return web.Response(
        status=code,
        text=json.dumps(status) + "\n",
        content_type="application/json",
        headers={"X-Content-Type-Options": "nosniff"},
    )


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class RequestGuard:
    """The authentication and authorization filters of the secure port.

    AUTHENTICATOR None: only anonymous requests are known (a bearer token gets
    401). AUTHORIZER None: only always-allowed paths and groups pass."""

    def __init__(
        self,
        authenticator: TokenAuthenticator | None,
        authorizer: PathAuthorizer | None,
        always_allow_paths: Iterable[str] = ALWAYS_ALLOW_PATHS,
        always_allow_groups: Iterable[str] = ALWAYS_ALLOW_GROUPS,
    ) -> None:
        self.authenticator = authenticator
        self.authorizer = authorizer
        self.always_allowed = always_allow_path_matcher(always_allow_paths)
        self.always_allow_groups = frozenset(always_allow_groups)

    async def _authenticate(self, request: web.Request) -> UserInfo | None:
        header = request.headers.get("Authorization", "")
        scheme, _, token = header.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            # bearertoken.Authenticator passes on anything that is not a bearer
            # token; the anonymous authenticator takes the request.
            return ANONYMOUS
        if self.authenticator is None:
            return None
        try:
            return await self.authenticator.authenticate_token(token)
        except Exception as exc:
            log.error("Unable to authenticate the request", extra=kv(err=str(exc)))
            return None

    async def _authorize(self, user: UserInfo, verb: str, path: str) -> AuthorizationDecision:
        # The union authorizer: the privileged groups, then the paths, then the webhook.
        if self.always_allow_groups.intersection(user.groups) or self.always_allowed(path):
            return AuthorizationDecision(True)
        if self.authorizer is None:
            return AuthorizationDecision(False)
        return await self.authorizer.authorize(user, verb, path)

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        user = await self._authenticate(request)
        if user is None:
            return _status(401, "Unauthorized", "Unauthorized")
        verb = request.method.lower()
        path = request.path
        try:
            decision = await self._authorize(user, verb, path)
        except Exception as exc:
            log.error("Authorization failed", extra=kv(user=user.name, path=path, err=str(exc)))
            return _status(500, "InternalError", f"Internal error occurred: {exc}")
        if not decision.allowed:
            log.log(
                V(4),
                "Forbidden",
                extra=kv(user=user.name, verb=verb, path=path, reason=decision.reason),
            )
            message = (
                f"forbidden: User {json.dumps(user.name)} cannot {verb} path {json.dumps(path)}"
            )
            if decision.reason:
                message = f"{message}: {decision.reason}"
            return _status(403, "Forbidden", message)
        return await handler(request)
