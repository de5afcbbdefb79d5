"""TokenReview and SubjectAccessReview: the API server decides who may read the
secure port, as for kube-scheduler's delegating authenticator and authorizer
(k8s.io/apiserver/plugin/pkg/authenticator/token/webhook and
plugin/pkg/authorizer/webhook, driven by DelegatingAuthenticationOptions and
DelegatingAuthorizationOptions). kubesched.server.auth caches the answers."""

from __future__ import annotations

import msgspec

from kubesched.kube.client import KubeClient
from kubesched.server.auth import AuthorizationDecision, UserInfo

__all__ = ["SubjectAccessReviewAuthorizer", "TokenReviewAuthenticator"]

TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
SUBJECT_ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"


class _ReviewedUser(msgspec.Struct, omit_defaults=True):
    username: str = ""
    uid: str = ""
    groups: list[str] = msgspec.field(default_factory=list)
    extra: dict[str, list[str]] = msgspec.field(default_factory=dict)


class _TokenReviewStatus(msgspec.Struct, omit_defaults=True):
    authenticated: bool = False
    user: _ReviewedUser = msgspec.field(default_factory=_ReviewedUser)
    error: str = ""


class _TokenReview(msgspec.Struct):
    status: _TokenReviewStatus = msgspec.field(default_factory=_TokenReviewStatus)


class _AccessReviewStatus(msgspec.Struct, omit_defaults=True):
    allowed: bool = False
    denied: bool = False
    reason: str = ""


class _AccessReview(msgspec.Struct):
    status: _AccessReviewStatus = msgspec.field(default_factory=_AccessReviewStatus)


class TokenReviewAuthenticator:
    """A bearer token's user, as the API server's TokenReview says (no audiences:
    the delegating options' default)."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client

    async def authenticate_token(self, token: str) -> UserInfo | None:
        body = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": {"token": token},
        }
        review = msgspec.json.decode(await self.client.post(TOKEN_REVIEWS, body), type=_TokenReview)
        status = review.status
        if not status.authenticated:
            return None
        user = status.user
        return UserInfo(
            user.username,
            user.uid,
            tuple(user.groups),
            {key: tuple(values) for key, values in user.extra.items()},
        )


class SubjectAccessReviewAuthorizer:
    """May a user do a verb on a non-resource path, as the API server's
    SubjectAccessReview says (WebhookAuthorizer.Authorize: allowed is allowed,
    anything else is not; both allowed and denied is an error)."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client

    async def authorize(self, user: UserInfo, verb: str, path: str) -> AuthorizationDecision:
        spec: dict[str, object] = {
            "user": user.name,
            "groups": list(user.groups),
            "nonResourceAttributes": {"path": path, "verb": verb},
        }
        if user.uid:
            spec["uid"] = user.uid
        if user.extra:
            spec["extra"] = {key: list(values) for key, values in user.extra.items()}
        body = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": spec,
        }
        answer = await self.client.post(SUBJECT_ACCESS_REVIEWS, body)
        status = msgspec.json.decode(answer, type=_AccessReview).status
        if status.allowed and status.denied:
            raise RuntimeError(
                "webhook subject access review returned both allow and deny response"
            )
        return AuthorizationDecision(status.allowed, status.reason)
