"""The protobuf envelope, the watch stream's frames, and the kinds read in protobuf.

An object or a list on the wire (runtime/serializer/protobuf/protobuf.go,
Serializer.Decode and Encode): the 4 bytes "k8s\\0", then a runtime.Unknown
{typeMeta{apiVersion, kind}, raw, contentEncoding, contentType} whose `raw` is
the object's own message. A watch (`;stream=watch`, codec_factory.go): frames
of a 4-byte big-endian length and a metav1.WatchEvent{type, object} with no
envelope of its own (RawSerializer); `object.raw` is an enveloped object.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Iterator
from importlib import resources
from typing import Any

from google.protobuf import descriptor_pb2, message_factory

from kubesched.api.objects import (
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    Namespace,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    PodDisruptionBudget,
    PriorityClass,
    StorageClass,
    VolumeAttachment,
)
from kubesched.api.resource import DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice
from kubesched.kube.protobuf.convert import Converter, compile_converters

CONTENT_TYPE = "application/vnd.kubernetes.protobuf"
WATCH_CONTENT_TYPE = CONTENT_TYPE + ";stream=watch"
MAGIC = b"k8s\x00"

# The kinds kubesched reads and the messages they are.
MESSAGES: dict[type, str] = {
    Pod: "k8s.io.api.core.v1.Pod",
    Node: "k8s.io.api.core.v1.Node",
    Namespace: "k8s.io.api.core.v1.Namespace",
    PersistentVolume: "k8s.io.api.core.v1.PersistentVolume",
    PersistentVolumeClaim: "k8s.io.api.core.v1.PersistentVolumeClaim",
    PodDisruptionBudget: "k8s.io.api.policy.v1.PodDisruptionBudget",
    PriorityClass: "k8s.io.api.scheduling.v1.PriorityClass",
    StorageClass: "k8s.io.api.storage.v1.StorageClass",
    CSINode: "k8s.io.api.storage.v1.CSINode",
    CSIDriver: "k8s.io.api.storage.v1.CSIDriver",
    CSIStorageCapacity: "k8s.io.api.storage.v1.CSIStorageCapacity",
    VolumeAttachment: "k8s.io.api.storage.v1.VolumeAttachment",
    DeviceClass: "k8s.io.api.resource.v1.DeviceClass",
    ResourceSlice: "k8s.io.api.resource.v1.ResourceSlice",
    ResourceClaim: "k8s.io.api.resource.v1.ResourceClaim",
    ResourceClaimTemplate: "k8s.io.api.resource.v1.ResourceClaimTemplate",
}


class ProtobufError(ValueError):
    """Bytes that are not what the protobuf serializer writes."""


@functools.cache
def _messages() -> dict[str, type[Any]]:
    data = resources.files(__package__).joinpath("k8s.binpb").read_bytes()
    files = descriptor_pb2.FileDescriptorSet.FromString(data)
    return message_factory.GetMessages(list(files.file))


def message_class(full_name: str) -> type[Any]:
    return _messages()[full_name]


@functools.cache
def _converters() -> dict[type, Converter]:
    pairs = {cls: message_class(name).DESCRIPTOR for cls, name in MESSAGES.items()}
    return compile_converters(pairs)


def has_protobuf(kind: type) -> bool:
    """Whether kubesched reads `kind` in protobuf (CRDs have no protobuf upstream)."""
    return kind in MESSAGES


class KindCodec:
    """One kind's messages (object, list) and its converter to the struct."""

    def __init__(self, kind: type) -> None:
        name = MESSAGES[kind]
        self.message = message_class(name)
        self.list_message = message_class(name + "List")
        self.convert = _converters()[kind]

    def decode(self, data: bytes | memoryview) -> Any:
        """An enveloped object, as its struct."""
        return self.convert(self.message.FromString(unwrap(data)))

    def decode_list(self, data: bytes) -> tuple[Any, list[Any]]:
        """An enveloped list: its ListMeta message and the items' messages."""
        listed = self.list_message.FromString(unwrap(data))
        return listed.metadata, listed.items[:]


def _varint(data: memoryview, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        if i >= len(data):
            raise ProtobufError("a varint runs past the end")
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, i
        shift += 7


def unwrap(data: bytes | memoryview) -> memoryview:
    """The object's own bytes in an envelope (runtime.Unknown's `raw`, field 2), read
    without building the Unknown (its other fields are length-delimited too)."""
    view = memoryview(data)
    if view[:4] != MAGIC:
        raise ProtobufError("not a Kubernetes protobuf object (no k8s\\0 prefix)")
    i, end = 4, len(view)
    while i < end:
        tag, i = _varint(view, i)
        if tag & 7 != 2:
            raise ProtobufError("unexpected wire type in runtime.Unknown")
        size, i = _varint(view, i)
        if tag >> 3 == 2:
            return view[i : i + size]
        i += size
    return view[0:0]


def envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    """An object's message in the envelope the API server reads (Serializer.Encode)."""
    unknown = message_class("k8s.io.apimachinery.pkg.runtime.Unknown")(raw=raw)
    unknown.typeMeta.apiVersion = api_version
    unknown.typeMeta.kind = kind
    return MAGIC + unknown.SerializeToString()  # type: ignore[no-any-return]


class Frames:
    """The watch stream's frames (framer.lengthDelimitedFrameReader), as bytes come."""

    def __init__(self) -> None:
        self._pending = bytearray()

    def feed(self, chunk: bytes) -> Iterator[bytes]:
        self._pending += chunk
        pending = self._pending
        start = 0
        while len(pending) - start >= 4:
            (size,) = struct.unpack_from(">I", pending, start)
            if len(pending) - start - 4 < size:
                break
            yield bytes(pending[start + 4 : start + 4 + size])
            start += 4 + size
        if start:
            del pending[:start]

    @property
    def leftover(self) -> int:
        return len(self._pending)


def watch_event(frame: bytes) -> tuple[str, bytes]:
    """A frame's metav1.WatchEvent: its type and its object's enveloped bytes."""
    event = message_class("k8s.io.apimachinery.pkg.apis.meta.v1.WatchEvent").FromString(frame)
    return event.type, event.object.raw


def status_of(data: bytes | memoryview) -> tuple[int, str, str]:
    """An enveloped metav1.Status (an ERROR event's object): code, reason, message."""
    status = message_class("k8s.io.apimachinery.pkg.apis.meta.v1.Status").FromString(unwrap(data))
    return status.code, status.reason, status.message
