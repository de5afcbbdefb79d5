"""A lean async client for the few API calls a scheduler makes.

aiohttp does HTTP/1.1 with a pool of keep-alive connections and a C parser; msgspec
decodes straight into kubesched's structs, which is several times faster than the
generated models of the official client. Measured against the apiserver of
hack/cluster-up.sh (tests/integration), a request costs aiohttp about 0.2 ms of CPU
and httpx over HTTP/2 about 1.3 ms: binds are the bulk of a busy scheduler's
requests, so this is most of its CPU outside the scheduling cycle.
"""

from __future__ import annotations

import contextlib
import json
import logging
import ssl
import time
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, TypeVar

import aiohttp
import msgspec

from kubesched.kube.config import Connection
from kubesched.kube.inflight import CEILING, AdaptiveLimiter
from kubesched.kube.protobuf.encode import encode
from kubesched.kube.protobuf.wire import (
    CONTENT_TYPE as PROTOBUF,
)
from kubesched.kube.protobuf.wire import (
    MAGIC,
    WATCH_CONTENT_TYPE,
    Frames,
    KindCodec,
    ProtobufError,
    status_of,
    watch_event,
)
from kubesched.logs import V

T = TypeVar("T")

log = logging.getLogger("kubesched.kube.client")
# klog logs one line per API request at -v=6.
REQUEST_LOG_LEVEL = V(6)

USER_AGENT = "kubesched/0.1.0"
# Connections of the request pool: as many as the in-flight limit can reach (the
# AdaptiveLimiter, not the pool, decides how many requests are in flight).
MAX_CONNECTIONS = CEILING
# client-go's Request.maxRetries: how often a 429 or 5xx with a Retry-After is retried.
MAX_RETRIES = 10


class ApiError(Exception):
    """A non-2xx answer, with the API's Status reason and message when it sent one."""

    def __init__(self, status: int, reason: str, message: str, method: str, path: str):
        self.status = status
        self.reason = reason
        self.message = message
        super().__init__(f"{method} {path}: {status} {reason}: {message}")

    @classmethod
    def from_body(cls, status: int, phrase: str, body: bytes, method: str, path: str) -> ApiError:
        reason, message = phrase, body[:500].decode("utf-8", "replace")
        if body.startswith(MAGIC):
            # A metav1.Status in protobuf (the answer to a protobuf Accept).
            try:
                _, reason_pb, message_pb = status_of(body)
            except Exception:  # not a Status after all: the raw text says what it was
                return cls(status, reason, message, method, path)
            return cls(status, reason_pb or reason, message_pb or message, method, path)
        try:
            decoded = json.loads(body)
            reason = decoded.get("reason") or reason
            message = decoded.get("message") or message
        except (ValueError, AttributeError):
            pass
        return cls(status, reason, message, method, path)


def _retry_after_seconds(header: str | None) -> float | None:
    """retryAfterSeconds in client-go: a whole number of seconds, else no wait."""
    if header is None:
        return None
    try:
        seconds = int(header.strip())
    except ValueError:
        return None
    return float(seconds) if seconds >= 0 else None


class ListMeta(msgspec.Struct, rename="camel"):
    resource_version: str = ""
    continue_: str = msgspec.field(default="", name="continue")


class ObjectList(msgspec.Struct, rename="camel"):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[msgspec.Raw] = []


class WatchEvent(msgspec.Struct):
    type: str
    object: msgspec.Raw


# client-go's Accept when contentType is protobuf: protobuf, else anything (JSON).
PROTOBUF_ACCEPT = f"{PROTOBUF}, */*"


class ProtobufListing:
    """A list read in protobuf: its resourceVersion and its items' messages."""

    __slots__ = ("items", "resource_version")

    def __init__(self, resource_version: str, items: list[Any]) -> None:
        self.resource_version = resource_version
        self.items = items


class KubeClient:
    def __init__(
        self,
        connection: Connection,
        *,
        timeout: float = 30.0,
        limiter: AdaptiveLimiter | None = None,
        content_type: str = "application/json",
        accept: str = "",
    ):
        self.connection = connection
        # clientConnection.contentType: the wire format of built-in kinds' writes
        # (Bindings, Events), and of their lists and watches unless `accept`
        # (acceptContentTypes) says otherwise. CRDs are always JSON.
        self.content_type = content_type
        self.accept = accept or content_type
        self._timeout = timeout
        # Every request but watches waits here for a slot (binds, events, statuses).
        self.limiter = limiter or AdaptiveLimiter()
        self.retries = 0  # requests sent again after a Retry-After (tests read it)
        # Requests share one pool; every watch streams on a connection of its own
        # (an HTTP/1.1 stream holds its connection), from a pool without a limit so
        # that watches never wait behind binds.
        self._session: aiohttp.ClientSession | None = None
        self._watch_session: aiohttp.ClientSession | None = None

    def _ssl(self) -> ssl.SSLContext | bool:
        return self.connection.ssl_context

    def _make_session(self, limit: int) -> aiohttp.ClientSession:
        return aiohttp.ClientSession(
            self.connection.host,
            connector=aiohttp.TCPConnector(ssl=self._ssl(), limit=limit),
            headers={"User-Agent": USER_AGENT, "Accept": "application/json"},
            timeout=aiohttp.ClientTimeout(total=self._timeout, sock_connect=5.0),
        )

    def _requests(self) -> aiohttp.ClientSession:
        # Created on first use: a ClientSession belongs to the running event loop.
        if self._session is None:
            self._session = self._make_session(MAX_CONNECTIONS)
        return self._session

    def _watches(self) -> aiohttp.ClientSession:
        if self._watch_session is None:
            self._watch_session = self._make_session(0)
        return self._watch_session

    async def aclose(self) -> None:
        for session in (self._session, self._watch_session):
            if session is not None:
                await session.close()
        self._session = self._watch_session = None

    def _headers(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        headers = dict(self.connection.extra_headers)
        headers.update(extra or {})
        token = self.connection.authorization()
        if token:
            headers["Authorization"] = token
        return headers

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        before_send: Callable[[], None] | None = None,
        accept: str | None = None,
    ) -> bytes:
        """BEFORE_SEND runs once the request has its slot, right before each time it
        is sent (a Fence's check): what it raises ends the request unsent."""
        content = (
            None
            if body is None
            else (body if isinstance(body, bytes) else msgspec.json.encode(body))
        )
        headers = {"Content-Type": content_type} if content is not None else {}
        if accept is not None:
            headers["Accept"] = accept
        reauthenticated = False
        retries = 0
        while True:
            status, phrase, data, retry_after = await self._send(
                method, path, params, content, headers, before_send
            )
            if status == 401 and not reauthenticated:
                reauthenticated = True
                await self._reauthenticate()
                continue
            if retry_after is not None and retries < MAX_RETRIES:
                # checkWait in client-go's with_retry.go: a 429 or 5xx that says
                # when to come back is sent again then (the limiter holds every
                # request until that time).
                retries += 1
                self.retries += 1
                continue
            if status >= 400:
                raise ApiError.from_body(status, phrase, data, method, path)
            return data

    async def _send(
        self,
        method: str,
        path: str,
        params: Mapping[str, str] | None,
        content: bytes | None,
        headers: Mapping[str, str],
        before_send: Callable[[], None] | None = None,
    ) -> tuple[int, str, bytes, float | None]:
        """One request through the limiter: status, reason phrase, body, and the
        Retry-After of a 429 or 5xx (None if it had none or the answer is no overload)."""
        limiter = self.limiter
        in_flight = await limiter.acquire()
        started = time.monotonic()
        try:
            if before_send is not None:
                before_send()
            try:
                async with self._requests().request(
                    method, path, params=params, data=content, headers=self._headers(headers)
                ) as response:
                    data = await response.read()
                    status = response.status
                    phrase = response.reason or ""
                    retry_after_header = response.headers.get("Retry-After")
            except TimeoutError:
                # No answer in time: the apiserver is as overloaded as a 429 says.
                limiter.controller.on_overload(time.monotonic() - started, None)
                raise
            latency = time.monotonic() - started
            retry_after = None
            if status == 429 or status >= 500:
                retry_after = _retry_after_seconds(retry_after_header)
                limiter.controller.on_overload(latency, retry_after)
            else:
                limiter.controller.on_success(latency, in_flight)
        finally:
            limiter.release()
        if log.isEnabledFor(REQUEST_LOG_LEVEL):
            log.log(
                REQUEST_LOG_LEVEL,
                "%s %s%s %d %s in %d milliseconds",
                method,
                self.connection.host,
                path,
                status,
                phrase,
                latency * 1000,
            )
        return status, phrase, data, retry_after

    async def _reauthenticate(self) -> None:
        await self.connection.reload()
        # New credentials (a client certificate lives in the TLS context): new pools.
        await self.aclose()

    async def get(self, path: str, kind: type[T], params: Mapping[str, str] | None = None) -> T:
        return msgspec.json.decode(await self.request("GET", path, params=params), type=kind)

    async def post(self, path: str, body: Any) -> bytes:
        return await self.request("POST", path, body=body)

    async def create(
        self,
        path: str,
        body: Mapping[str, Any],
        message: str,
        before_send: Callable[[], None] | None = None,
    ) -> bytes:
        """POST a new built-in object (its apiVersion and kind in `body`) in the
        client's content type: protobuf as `message` (the Go type's full name),
        or JSON."""
        if self.content_type == PROTOBUF:
            return await self.request(
                "POST",
                path,
                body=encode(body, message),
                content_type=PROTOBUF,
                before_send=before_send,
            )
        return await self.request("POST", path, body=body, before_send=before_send)

    async def put(self, path: str, body: Any) -> bytes:
        return await self.request("PUT", path, body=body)

    async def patch(self, path: str, body: Any, patch_type: str = "strategic-merge-patch") -> bytes:
        return await self.request(
            "PATCH", path, body=body, content_type=f"application/{patch_type}+json"
        )

    async def delete(self, path: str, body: Any = None) -> bytes:
        return await self.request("DELETE", path, body=body)

    async def list(
        self, path: str, params: Mapping[str, str] | None = None, page_size: int = 500
    ) -> ObjectList:
        """All items of a list, following `continue` pages; resourceVersion of the last page."""
        query = {**(params or {}), "limit": str(page_size)}
        items: list[msgspec.Raw] = []
        while True:
            page = await self.get(path, ObjectList, query)
            items.extend(page.items)
            if not page.metadata.continue_:
                return ObjectList(page.metadata, items)
            query["continue"] = page.metadata.continue_

    async def list_protobuf(
        self,
        path: str,
        codec: KindCodec,
        params: Mapping[str, str] | None = None,
        page_size: int = 500,
    ) -> ProtobufListing:
        """list() in protobuf: the items as messages (the caller converts them)."""
        query = {**(params or {}), "limit": str(page_size)}
        items: list[Any] = []
        while True:
            body = await self.request("GET", path, params=query, accept=PROTOBUF_ACCEPT)
            if not body.startswith(MAGIC):
                raise ProtobufError(f"GET {path}: the API server did not answer in protobuf")
            meta, page = codec.decode_list(body)
            items.extend(page)
            next_page: str = getattr(meta, "continue")
            if not next_page:
                return ProtobufListing(meta.resourceVersion, items)
            query["continue"] = next_page

    @contextlib.asynccontextmanager
    async def _watch_stream(
        self, path: str, params: Mapping[str, str], timeout_seconds: int, accept: str | None
    ) -> AsyncIterator[aiohttp.ClientResponse]:
        """One watch request's response, its status checked (an error raises ApiError)."""
        query = {**params, "watch": "true", "timeoutSeconds": str(timeout_seconds)}
        timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=5.0, sock_read=timeout_seconds + 30.0
        )
        headers = self._headers(None if accept is None else {"Accept": accept})
        async with self._watches().get(
            path, params=query, headers=headers, timeout=timeout
        ) as response:
            if response.status >= 400:
                raise ApiError.from_body(
                    response.status, response.reason or "", await response.read(), "WATCH", path
                )
            yield response

    async def watch_protobuf(
        self, path: str, params: Mapping[str, str], timeout_seconds: int
    ) -> AsyncIterator[tuple[str, bytes]]:
        """watch() in protobuf: each event's type and its object's enveloped bytes."""
        async with self._watch_stream(path, params, timeout_seconds, PROTOBUF_ACCEPT) as response:
            if response.headers.get("Content-Type", "") != WATCH_CONTENT_TYPE:
                raise ProtobufError(f"WATCH {path}: the API server did not answer in protobuf")
            frames = Frames()
            async for chunk in response.content.iter_any():
                for frame in frames.feed(chunk):
                    yield watch_event(frame)

    async def watch(
        self, path: str, params: Mapping[str, str], timeout_seconds: int
    ) -> AsyncIterator[WatchEvent]:
        """The events of one watch request, until the server ends it."""
        decoder = msgspec.json.Decoder(WatchEvent)
        async with self._watch_stream(path, params, timeout_seconds, None) as response:
            # One JSON object per line. Lines are split here rather than by the
            # stream's readline, which refuses lines longer than its buffer (a pod
            # with large annotations can exceed it).
            pending = b""
            async for chunk in response.content.iter_any():
                pending += chunk
                if b"\n" not in chunk:
                    continue
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    if line:
                        yield decoder.decode(line)
            if pending.strip():
                yield decoder.decode(pending)
