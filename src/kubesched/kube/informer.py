"""List-and-watch, as client-go's reflector does it.

List once, then watch from the list's resourceVersion with bookmarks so a
reconnect resumes where it left off; a 410 Gone means the history is gone and
we list again (sending the handler only what changed); any other failure is
retried with exponential backoff. Handlers run on the event loop, between
scheduling cycles.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

import msgspec

from kubesched.api.objects import ObjectMeta
from kubesched.kube.client import ApiError, KubeClient
from kubesched.kube.cpu_budget import INFORMER_HANDLERS, WATCH_DECODE, CpuBudget
from kubesched.kube.protobuf.wire import CONTENT_TYPE as PROTOBUF
from kubesched.kube.protobuf.wire import KindCodec, has_protobuf, status_of

log = logging.getLogger("kubesched.informer")


class _HasMeta(Protocol):
    @property
    def metadata(self) -> ObjectMeta: ...


T = TypeVar("T", bound=_HasMeta)

MIN_BACKOFF = 0.8
MAX_BACKOFF = 30.0
WATCH_TIMEOUT = (300, 600)  # seconds, chosen at random per watch as client-go does


class _Bookmark(msgspec.Struct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)


class ApiStatus(msgspec.Struct):
    code: int = 0
    reason: str = ""
    message: str = ""


@dataclass
class Handlers(Generic[T]):
    add: Callable[[T], None]
    update: Callable[[T, T], None]
    delete: Callable[[T], None]


def object_key(obj: _HasMeta) -> str:
    return obj.metadata.key


class Gone(Exception):
    """410: the resourceVersion we asked for is too old."""


class Informer(Generic[T]):
    def __init__(
        self,
        client: KubeClient,
        path: str,
        kind: type[T],
        handlers: Handlers[T],
        *,
        params: Mapping[str, str] | None = None,
        name: str = "",
        budget: CpuBudget | None = None,
    ) -> None:
        self.client = client
        self.path = path
        self.kind = kind
        self.handlers = handlers
        self.params = dict(params or {})
        self.name = name or path
        self.store: dict[str, T] = {}
        self.resource_version = ""
        self.synced = asyncio.Event()
        self.lists = 0  # how many times we listed (tests read it)
        self._decoder = msgspec.json.Decoder(kind)
        # Built-in kinds in the client's content type; CRDs (no protobuf) in JSON.
        self._codec = KindCodec(kind) if client.accept == PROTOBUF and has_protobuf(kind) else None
        self.budget = budget

    async def run(self) -> None:
        backoff = MIN_BACKOFF
        while True:
            try:
                if not self.resource_version:
                    await self._relist()
                await self._watch()
                backoff = MIN_BACKOFF
            except Gone:
                log.info(
                    "%s: resourceVersion %s is gone, listing again",
                    self.name,
                    self.resource_version,
                )
                self.resource_version = ""
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # whatever it is, the watch must come back
                if isinstance(exc, ApiError) and exc.status == 410:
                    self.resource_version = ""
                    continue
                log.warning(
                    "%s: %s: %s; retrying in %.1fs", self.name, type(exc).__name__, exc, backoff
                )
                await asyncio.sleep(backoff * random.uniform(1.0, 1.2))
                backoff = min(backoff * 2, MAX_BACKOFF)

    async def _relist(self) -> None:
        fresh: dict[str, T] = {}
        codec = self._codec
        if codec is not None:
            listing = await self.client.list_protobuf(self.path, codec, self.params)
            started = time.thread_time()
            for message in listing.items:
                obj = codec.convert(message)
                fresh[object_key(obj)] = obj
            resource_version = listing.resource_version
        else:
            listed = await self.client.list(self.path, self.params)
            started = time.thread_time()
            for raw in listed.items:
                obj = self._decoder.decode(raw)
                fresh[object_key(obj)] = obj
            resource_version = listed.metadata.resource_version
        if self.budget is not None:
            self.budget.add(WATCH_DECODE, time.thread_time() - started)
        old = self.store
        self.store = fresh
        for key, obj in fresh.items():
            before = old.get(key)
            if before is None:
                self._dispatch(self.handlers.add, obj)
            elif before.metadata.resource_version != obj.metadata.resource_version:
                self._dispatch(self.handlers.update, before, obj)
        for key, obj in old.items():
            if key not in fresh:
                self._dispatch(self.handlers.delete, obj)
        self.resource_version = resource_version
        self.lists += 1
        self.synced.set()

    async def _watch(self) -> None:
        params = {
            **self.params,
            "resourceVersion": self.resource_version,
            "allowWatchBookmarks": "true",
        }
        timeout = random.randint(*WATCH_TIMEOUT)
        codec = self._codec
        if codec is None:
            events = self._json_events(params, timeout)
            decode: Callable[[Any], T] = self._decoder.decode
        else:
            events = self._protobuf_events(codec, params, timeout)
            decode = codec.decode
        async for event_type, value in events:
            if event_type == "ERROR":
                status: ApiStatus = value
                if status.code == 410:
                    raise Gone()
                raise ApiError(status.code, status.reason, status.message, "WATCH", self.path)
            if event_type == "BOOKMARK":
                if value:
                    self.resource_version = value
                continue
            if self.budget is None:
                obj = decode(value)
            else:
                started = time.thread_time()
                obj = decode(value)
                self.budget.add(WATCH_DECODE, time.thread_time() - started)
            self._apply(event_type, obj)

    async def _json_events(
        self, params: Mapping[str, str], timeout: int
    ) -> AsyncIterator[tuple[str, Any]]:
        """(type, value) of each event: an ERROR's ApiStatus, a BOOKMARK's
        resourceVersion, else the object as it came (`_watch` decodes it)."""
        async for event in self.client.watch(self.path, params, timeout):
            if event.type == "ERROR":
                yield event.type, msgspec.json.decode(event.object, type=ApiStatus)
            elif event.type == "BOOKMARK":
                # A bookmark carries only metadata.resourceVersion: its object is not
                # a valid Pod or Node (e.g. spec.containers is null).
                mark = msgspec.json.decode(event.object, type=_Bookmark)
                yield event.type, mark.metadata.resource_version
            else:
                yield event.type, event.object

    async def _protobuf_events(
        self, codec: KindCodec, params: Mapping[str, str], timeout: int
    ) -> AsyncIterator[tuple[str, Any]]:
        """_json_events in protobuf."""
        async for event_type, raw in self.client.watch_protobuf(self.path, params, timeout):
            if event_type == "ERROR":
                code, reason, message = status_of(raw)
                yield event_type, ApiStatus(code, reason, message)
            elif event_type == "BOOKMARK":
                yield event_type, codec.decode(raw).metadata.resource_version
            else:
                yield event_type, raw

    def _apply(self, event_type: str, obj: T) -> None:
        """An ADDED, MODIFIED or DELETED event to the store and the handlers."""
        if obj.metadata.resource_version:
            self.resource_version = obj.metadata.resource_version
        key = object_key(obj)
        if event_type == "DELETED":
            gone = self.store.pop(key, None)
            self._dispatch(self.handlers.delete, gone or obj)
        else:
            before = self.store.get(key)
            self.store[key] = obj
            if before is None:
                self._dispatch(self.handlers.add, obj)
            else:
                self._dispatch(self.handlers.update, before, obj)

    def _dispatch(self, handler: Callable[..., None], *objs: T) -> None:
        started = time.thread_time() if self.budget is not None else 0.0
        try:
            handler(*objs)
        except Exception:  # a bad object must not stop the watch
            log.exception("%s: handler failed for %s", self.name, object_key(objs[-1]))
        if self.budget is not None:
            self.budget.add(INFORMER_HANDLERS, time.thread_time() - started)
