"""A JSON-shaped object (as kubesched writes it) in Kubernetes' protobuf.

For the objects kubesched creates: Bindings and events.k8s.io Events, a few
small ones per pod, written by the API worker. Each key is the field of that
JSON name; the special types go as their Go types encode them (convert.py has
the rules the other way round).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from kubesched.kube.protobuf.convert import INT_OR_STRING, MICROTIME, QUANTITY, TIME
from kubesched.kube.protobuf.wire import envelope, message_class


class EncodeError(ValueError):
    """A field the message does not have, or a value its type cannot take."""


def _timestamp(text: str) -> tuple[int, int]:
    """RFC 3339 (with or without fractional seconds) as (seconds, nanoseconds)."""
    at = datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)
    return int(at.timestamp()), at.microsecond * 1000


def _fill(message: Any, values: Mapping[str, Any], where: str) -> None:
    fields = message.DESCRIPTOR.fields_by_name
    for name, value in values.items():
        fd = fields.get(name)
        if fd is None:
            raise EncodeError(f"{where}.{name}: not a field of {message.DESCRIPTOR.full_name}")
        path = f"{where}.{name}"
        if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
            getattr(message, name).update(value)
        elif fd.is_repeated:
            container = getattr(message, name)
            for i, item in enumerate(value):
                if fd.message_type is None:
                    container.append(item)
                else:
                    _set_message(container.add(), item, f"{path}[{i}]")
        elif fd.message_type is None:
            setattr(message, name, value)
        else:
            _set_message(getattr(message, name), value, path)


def _set_message(message: Any, value: Any, where: str) -> None:
    full_name = message.DESCRIPTOR.full_name
    if full_name in (TIME, MICROTIME):
        message.seconds, nanos = _timestamp(value)
        if full_name == MICROTIME:
            message.nanos = nanos
    elif full_name == QUANTITY:
        message.string = str(value)
    elif full_name == INT_OR_STRING:
        if isinstance(value, str):
            message.type, message.strVal = 1, value
        else:
            message.type, message.intVal = 0, value
    elif isinstance(value, Mapping):
        _fill(message, value, where)
    else:
        raise EncodeError(f"{where}: a {full_name} cannot be {value!r}")


def encode(body: Mapping[str, Any], message_name: str) -> bytes:
    """`body` (with its apiVersion and kind) as the enveloped `message_name`."""
    message = message_class(message_name)()
    _fill(message, {k: v for k, v in body.items() if k not in ("apiVersion", "kind")}, "")
    return envelope(body["apiVersion"], body["kind"], message.SerializeToString())
