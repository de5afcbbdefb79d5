"""Claim constraints (structured/internal/incubating: matchAttributeConstraint in
allocator_incubating.go, distinctAttributeConstraint in constraint.go of v1.36).

Constraints are monotonic: once `add` refuses a device, more devices will not
help. Every successful `add` is undone by exactly one `remove` with the same
arguments."""

from __future__ import annotations

from typing import Protocol

from kubesched.api.resource import Device, DeviceAttribute
from kubesched.framework.state.dra import DeviceID


class Constraint(Protocol):
    def add(self, request: str, subrequest: str, device: Device, device_id: DeviceID) -> bool: ...

    def remove(
        self, request: str, subrequest: str, device: Device, device_id: DeviceID
    ) -> None: ...


def lookup_attribute(device: Device, device_id: DeviceID, name: str) -> DeviceAttribute | None:
    """lookupAttribute: the fully qualified name, or the bare id when the domain is
    the device's driver."""
    attr = device.attributes.get(name)
    if attr is not None:
        return attr
    domain, sep, ident = name.partition("/")
    if not sep or domain != device_id[0]:
        return None
    return device.attributes.get(ident)


def _applies(names: frozenset[str], request: str, subrequest: str) -> bool:
    if not names:
        return True
    if not subrequest:
        return request in names
    return request in names or f"{request}/{subrequest}" in names


class MatchAttributeConstraint:
    """matchAttributeConstraint: every device of the named requests has the attribute,
    all with the same value (of the same kind)."""

    def __init__(self, requests: list[str], attribute: str) -> None:
        self.requests = frozenset(requests)
        self.attribute_name = attribute
        self.attribute: DeviceAttribute | None = None
        self.num_devices = 0

    def add(self, request: str, subrequest: str, device: Device, device_id: DeviceID) -> bool:
        if not _applies(self.requests, request, subrequest):
            return True
        attribute = lookup_attribute(device, device_id, self.attribute_name)
        if attribute is None:
            return False
        if self.num_devices == 0:
            self.attribute = attribute
            self.num_devices = 1
            return True
        first = self.attribute
        assert first is not None
        if attribute.string_value is not None:
            same = first.string_value == attribute.string_value
        elif attribute.int_value is not None:
            same = first.int_value == attribute.int_value
        elif attribute.bool_value is not None:
            same = first.bool_value == attribute.bool_value
        elif attribute.version_value is not None:
            # semver values are in minimal form: equal versions are equal strings.
            same = first.version_value == attribute.version_value
        else:
            same = False
        if not same:
            return False
        self.num_devices += 1
        return True

    def remove(self, request: str, subrequest: str, device: Device, device_id: DeviceID) -> None:
        if not _applies(self.requests, request, subrequest):
            return
        self.num_devices -= 1


class DistinctAttributeConstraint:
    """distinctAttributeConstraint: the devices of the named requests all have the
    attribute, no two with the same value. As upstream, the values seen are kept by
    request name (the base request's), so a second device of the same request
    replaces the first one's entry."""

    def __init__(self, requests: list[str], attribute: str) -> None:
        self.requests = frozenset(requests)
        self.attribute_name = attribute
        self.attributes: dict[str, DeviceAttribute] = {}
        self.num_devices = 0

    def add(self, request: str, subrequest: str, device: Device, device_id: DeviceID) -> bool:
        if not _applies(self.requests, request, subrequest):
            return True
        attribute = lookup_attribute(device, device_id, self.attribute_name)
        if attribute is None:
            return False
        if self.num_devices == 0:
            self.attributes[request] = attribute
            self.num_devices = 1
            return True
        if not self._distinct(attribute):
            return False
        self.attributes[request] = attribute
        self.num_devices += 1
        return True

    def remove(self, request: str, subrequest: str, device: Device, device_id: DeviceID) -> None:
        if not _applies(self.requests, request, subrequest):
            return
        self.attributes.pop(request, None)
        self.num_devices -= 1

    def _distinct(self, attribute: DeviceAttribute) -> bool:
        for seen in self.attributes.values():
            if attribute.string_value is not None:
                if seen.string_value is not None and seen.string_value == attribute.string_value:
                    return False
            elif attribute.int_value is not None:
                if seen.int_value is not None and seen.int_value == attribute.int_value:
                    return False
            elif attribute.bool_value is not None:
                if seen.bool_value is not None and seen.bool_value == attribute.bool_value:
                    return False
            elif attribute.version_value is not None:
                if seen.version_value is not None and seen.version_value == attribute.version_value:
                    return False
            else:
                return False
        return True
