"""A lean async client for the few API calls a scheduler makes.

httpx does HTTP (and HTTP/2); msgspec decodes straight into kubesched's structs,
which is several times faster than the generated models of the official client.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from typing import Any, TypeVar

import httpx
import msgspec

from kubesched.kube.config import Connection

T = TypeVar("T")

USER_AGENT = "kubesched/0.1.0"


class ApiError(Exception):
    """A non-2xx answer, with the API's Status reason and message when it sent one."""

    def __init__(self, status: int, reason: str, message: str, method: str, path: str):
        self.status = status
        self.reason = reason
        self.message = message
        super().__init__(f"{method} {path}: {status} {reason}: {message}")

    @classmethod
    def from_response(cls, response: httpx.Response, method: str, path: str) -> ApiError:
        reason, message = response.reason_phrase, response.text[:500]
        try:
            body = json.loads(response.content)
            reason = body.get("reason") or reason
            message = body.get("message") or message
        except ValueError:
            pass
        return cls(response.status_code, reason, message, method, path)


class ListMeta(msgspec.Struct, rename="camel"):
    resource_version: str = ""
    continue_: str = msgspec.field(default="", name="continue")


class ObjectList(msgspec.Struct, rename="camel"):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[msgspec.Raw] = []


class WatchEvent(msgspec.Struct):
    type: str
    object: msgspec.Raw


class KubeClient:
    def __init__(self, connection: Connection, *, timeout: float = 30.0, http2: bool = True):
        self.connection = connection
        self._timeout = timeout
        self._http2 = http2
        self._client = self._make_client()
        # Each watch path streams on a connection of its own. On one shared HTTP/2
        # connection, httpcore lets a stream's reader hold the read lock while it
        # waits for its own data: with three or more streams waiting (watches, or
        # watches and a request), an event read for one stream can sit in its queue
        # until some other data arrives, minutes later for quiet watches.
        self._watch_clients: dict[str, httpx.AsyncClient] = {}

    def _make_client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            base_url=self.connection.host,
            verify=self.connection.ssl_context,
            http2=self._http2,
            timeout=httpx.Timeout(self._timeout, connect=5.0),
            headers={"User-Agent": USER_AGENT, "Accept": "application/json"},
            limits=httpx.Limits(max_connections=64, max_keepalive_connections=32),
        )

    async def aclose(self) -> None:
        await self._client.aclose()
        for client in self._watch_clients.values():
            await client.aclose()

    def _headers(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        headers = dict(extra or {})
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
    ) -> bytes:
        content = (
            None
            if body is None
            else (body if isinstance(body, bytes) else msgspec.json.encode(body))
        )
        headers = {"Content-Type": content_type} if content is not None else {}
        for attempt in (1, 2):
            response = await self._client.request(
                method, path, params=params, content=content, headers=self._headers(headers)
            )
            if response.status_code == 401 and attempt == 1:
                await self._reauthenticate()
                continue
            if response.status_code >= 400:
                raise ApiError.from_response(response, method, path)
            return response.content
        raise AssertionError("unreachable")

    async def _reauthenticate(self) -> None:
        await self.connection.reload()
        old = [self._client, *self._watch_clients.values()]
        self._client = self._make_client()
        self._watch_clients = {}
        for client in old:
            await client.aclose()

    async def get(self, path: str, kind: type[T], params: Mapping[str, str] | None = None) -> T:
        return msgspec.json.decode(await self.request("GET", path, params=params), type=kind)

    async def post(self, path: str, body: Any) -> bytes:
        return await self.request("POST", path, body=body)

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

    async def watch(
        self, path: str, params: Mapping[str, str], timeout_seconds: int
    ) -> AsyncIterator[WatchEvent]:
        """The events of one watch request, until the server ends it."""
        query = {**params, "watch": "true", "timeoutSeconds": str(timeout_seconds)}
        timeout = httpx.Timeout(self._timeout, connect=5.0, read=timeout_seconds + 30.0)
        decoder = msgspec.json.Decoder(WatchEvent)
        client = self._watch_clients.get(path)
        if client is None:
            client = self._watch_clients[path] = self._make_client()
        async with client.stream(
            "GET", path, params=query, headers=self._headers(), timeout=timeout
        ) as response:
            if response.status_code >= 400:
                await response.aread()
                raise ApiError.from_response(response, "WATCH", path)
            async for line in response.aiter_lines():
                if line:
                    yield decoder.decode(line)
