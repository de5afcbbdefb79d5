"""kubesched.kube.protobuf on objects Kubernetes' own codecs encoded
(tests/unit/protobuf_fixtures): the protobuf path gives the structs the JSON path
gives; the watch framing, the envelope, and the writes' encoding."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import msgspec
import pytest
from google.protobuf import json_format

from kubesched.api.objects import Node, Pod
from kubesched.config.file import ConfigError, parse_config
from kubesched.kube.client import ApiError
from kubesched.kube.protobuf.encode import EncodeError, encode
from kubesched.kube.protobuf.wire import (
    MAGIC,
    MESSAGES,
    Frames,
    KindCodec,
    ProtobufError,
    envelope,
    message_class,
    unwrap,
    watch_event,
)

FIXTURES = Path(__file__).parent / "protobuf_fixtures"


@pytest.mark.parametrize(("kind", "name"), [(Pod, "pod"), (Node, "node")])
def test_protobuf_decodes_to_the_json_structs(kind: type, name: str) -> None:
    from_protobuf = KindCodec(kind).decode((FIXTURES / f"{name}.pb").read_bytes())
    from_json = msgspec.json.decode((FIXTURES / f"{name}.go.json").read_bytes(), type=kind)
    assert from_protobuf == from_json
    # Not two empty objects: the fixtures are rich.
    assert from_json.metadata.name and from_json.metadata.creation_timestamp


def test_every_kind_has_its_messages_and_a_converter() -> None:
    for kind in MESSAGES:
        codec = KindCodec(kind)
        assert (
            codec.list_message.DESCRIPTOR.full_name == codec.message.DESCRIPTOR.full_name + "List"
        )
        empty = codec.convert(codec.message())
        assert isinstance(empty, kind)


def _frame(payload: bytes) -> bytes:
    return struct.pack(">I", len(payload)) + payload


def test_watch_frames_come_whole_however_the_bytes_are_cut() -> None:
    pod = (FIXTURES / "pod.pb").read_bytes()
    event = message_class("k8s.io.apimachinery.pkg.apis.meta.v1.WatchEvent")(type="ADDED")
    event.object.raw = pod
    stream = _frame(event.SerializeToString()) * 3
    for cut in (1, 3, 4, 5, 100, len(stream)):
        frames = Frames()
        got = [
            watch_event(frame)
            for i in range(0, len(stream), cut)
            for frame in frames.feed(stream[i : i + cut])
        ]
        assert [t for t, _ in got] == ["ADDED"] * 3
        assert all(raw == pod for _, raw in got)
        assert frames.leftover == 0


def test_bytes_without_the_envelope_are_refused() -> None:
    with pytest.raises(ProtobufError, match="no k8s"):
        unwrap(b'{"kind": "Pod"}')
    with pytest.raises(ProtobufError):
        unwrap(MAGIC + b"\x12\xff")  # a length that runs past the end


def test_a_status_in_protobuf_becomes_the_api_error_text() -> None:
    status = message_class("k8s.io.apimachinery.pkg.apis.meta.v1.Status")(
        code=409, reason="Conflict", message='pods "p" is already assigned to node "n"'
    )
    body = envelope("v1", "Status", status.SerializeToString())
    error = ApiError.from_body(409, "Conflict", body, "POST", "/binding")
    assert (error.status, error.reason) == (409, "Conflict")
    assert error.message == 'pods "p" is already assigned to node "n"'


def _set(value: Any) -> Any:
    """A message's fields as a dict, the empty ones left out: Go writes its zero
    non-pointer fields, kubesched leaves them out, and the API server reads both
    alike."""
    if isinstance(value, dict):
        return {k: _set(v) for k, v in value.items() if v not in ("", "0", 0, False, {}, [])}
    return value


def test_a_binding_encodes_as_the_go_codec_does() -> None:
    body = msgspec.json.decode((FIXTURES / "binding.go.json").read_bytes())
    ours = encode(body, "k8s.io.api.core.v1.Binding")
    binding = message_class("k8s.io.api.core.v1.Binding")
    theirs = (FIXTURES / "binding.pb").read_bytes()
    assert ours[:4] == MAGIC and unwrap(ours).nbytes > 0
    ours_dict = _set(json_format.MessageToDict(binding.FromString(unwrap(ours))))
    theirs_dict = _set(json_format.MessageToDict(binding.FromString(unwrap(theirs))))
    assert ours_dict == theirs_dict
    assert ours_dict["target"]["name"] == body["target"]["name"]


def test_an_event_encodes_its_micro_time_and_refuses_unknown_fields() -> None:
    event = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "p.1", "namespace": "ns"},
        "eventTime": "2026-11-28T19:00:01.250000Z",
        "regarding": {"kind": "Pod", "name": "p", "namespace": "ns"},
        "note": "Successfully assigned",
        "type": "Normal",
    }
    message = message_class("k8s.io.api.events.v1.Event").FromString(
        unwrap(encode(event, "k8s.io.api.events.v1.Event"))
    )
    assert (message.eventTime.seconds, message.eventTime.nanos) == (1795892401, 250_000_000)
    assert message.regarding.name == "p" and message.note == "Successfully assigned"
    with pytest.raises(EncodeError, match=r"\.notes: not a field"):
        encode({**event, "notes": "x"}, "k8s.io.api.events.v1.Event")


def _config(connection: dict[str, str]) -> dict[str, object]:
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": connection,
    }


def test_the_config_chooses_the_wire_format() -> None:
    assert parse_config(_config({})).content_type == "application/vnd.kubernetes.protobuf"
    json_config = parse_config(_config({"contentType": "application/json"}))
    assert (json_config.content_type, json_config.accept_content_type) == (
        "application/json",
        "application/json",
    )
    reads_json = parse_config(
        _config({"acceptContentTypes": "application/json,application/vnd.kubernetes.protobuf"})
    )
    assert reads_json.accept_content_type == "application/json"
    assert reads_json.content_type == "application/vnd.kubernetes.protobuf"
    with pytest.raises(ConfigError, match=r"clientConnection\.contentType: Unsupported value"):
        parse_config(_config({"contentType": "application/cbor"}))
    with pytest.raises(ConfigError, match=r"acceptContentTypes: Unsupported value: 'text/plain'"):
        parse_config(_config({"acceptContentTypes": "text/plain"}))
