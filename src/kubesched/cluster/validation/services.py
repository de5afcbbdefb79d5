"""ValidateService, as far as kubesched reads a Service: its name (a DNS-1035
label, ValidateServiceName) and its selector's labels. The ports, IPs and the
rest of the spec are not read and not checked (field validation still refuses
unknown fields)."""

from __future__ import annotations

from kubesched.api.workloads import Service
from kubesched.cluster.validation.field_errors import FieldErrors
from kubesched.cluster.validation.names_labels import (
    name_is_dns1035_label,
    validate_labels,
    validate_object_meta,
)


def validate_service(service: Service) -> FieldErrors:
    yield from validate_object_meta(service.metadata, name_is_dns1035_label, namespaced=True)
    if service.spec.selector:
        yield from validate_labels(service.spec.selector, "spec.selector")
