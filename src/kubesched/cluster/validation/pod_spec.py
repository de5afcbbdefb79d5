"""A pod's spec as ValidatePodSpec checks it (pkg/apis/core/validation), in its
order: containers (validateContainers, validateInitContainers and
validateContainerCommon's name, ports and resources), pod-level resources,
hostNetwork ports, nodeSelector, affinity, scheduling gates, topology spread,
nodeName, tolerations, priorityClassName, preemptionPolicy and overhead.

Not checked: what scheduling never reads and simulate does not decode (images,
probes, env, volume mounts, security contexts, DNS, ...).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kubesched.api.names import (
    dns1123_label_errors,
    label_value_errors,
    qualified_name_errors,
)
from kubesched.api.objects import Container, PodSpec, ResourceRequirements, Toleration
from kubesched.cluster.validation.affinity_spread import validate_affinity, validate_topology_spread
from kubesched.cluster.validation.field_errors import (
    FieldErrors,
    duplicate,
    invalid,
    invalid_each,
    not_supported,
    required,
)
from kubesched.cluster.validation.names_labels import (
    name_is_dns_subdomain,
    validate_label_name,
    validate_labels,
)
from kubesched.cluster.validation.resources import validate_requirements

_PORT_RANGE = "must be between 1 and 65535, inclusive"
_PROTOCOLS = ("SCTP", "TCP", "UDP")  # supportedPortProtocols, sorted
_TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")


def port_name_errors(name: str) -> list[str]:
    """validation.IsValidPortName (an IANA_SVC_NAME)."""
    errors = []
    if len(name) > 15:
        errors.append("must be no more than 15 characters")
    if not name or any(
        not (c.isascii() and (c.islower() or c.isdigit() or c == "-")) for c in name
    ):
        errors.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not any("a" <= c <= "z" for c in name):
        errors.append("must contain at least one letter (a-z)")
    if "--" in name:
        errors.append("must not contain consecutive hyphens")
    if name and (name[0] == "-" or name[-1] == "-"):
        errors.append("must not begin or end with a hyphen")
    return errors


def _validate_ports(container: Container, path: str) -> FieldErrors:
    """validateContainerPorts."""
    names: set[str] = set()
    for i, port in enumerate(container.ports):
        where = f"{path}[{i}]"
        if port.name:
            errors = port_name_errors(port.name)
            if errors:
                yield from invalid_each(f"{where}.name", port.name, errors)
            elif port.name in names:
                yield duplicate(f"{where}.name", port.name)
            names.add(port.name)
        if port.container_port == 0:
            yield required(f"{where}.containerPort")
        elif not 1 <= port.container_port <= 65535:
            yield invalid(f"{where}.containerPort", port.container_port, _PORT_RANGE)
        if port.host_port != 0 and not 1 <= port.host_port <= 65535:
            yield invalid(f"{where}.hostPort", port.host_port, _PORT_RANGE)
        # An empty protocol is defaulted to TCP (SetDefaults_ContainerPort).
        if port.protocol and port.protocol not in _PROTOCOLS:
            yield not_supported(f"{where}.protocol", port.protocol, _PROTOCOLS)


def _validate_host_port_conflicts(containers: Sequence[Container], path: str) -> FieldErrors:
    """checkHostPortConflicts: one host port per protocol and host IP."""
    seen: set[str] = set()
    for ci, container in enumerate(containers):
        for pi, port in enumerate(container.ports):
            if port.host_port == 0:
                continue
            key = f"{port.protocol or 'TCP'}/{port.host_ip}/{port.host_port}"
            if key in seen:
                yield duplicate(f"{path}[{ci}].ports[{pi}].hostPort", key)
            seen.add(key)


def _validate_container(container: Container, path: str) -> FieldErrors:
    """validateContainerCommon's checks of what simulate reads."""
    if not container.name:
        yield required(f"{path}.name")
    else:
        yield from invalid_each(
            f"{path}.name", container.name, dns1123_label_errors(container.name)
        )
    yield from _validate_ports(container, f"{path}.ports")
    yield from validate_requirements(container.resources, f"{path}.resources")


def _validate_containers(spec: PodSpec, path: str) -> FieldErrors:
    """validateContainers and validateInitContainers: at least one container, names
    unique across both lists, host ports unique within each."""
    containers_path = f"{path}.containers"
    if not spec.containers:
        yield required(containers_path)
    names: set[str] = set()
    for i, container in enumerate(spec.containers):
        yield from _validate_container(container, f"{containers_path}[{i}]")
        if container.name in names:
            yield duplicate(f"{containers_path}[{i}].name", container.name)
        names.add(container.name)
    yield from _validate_host_port_conflicts(spec.containers, containers_path)
    init_path = f"{path}.initContainers"
    for i, container in enumerate(spec.init_containers):
        yield from _validate_container(container, f"{init_path}[{i}]")
        if container.name in names:
            yield duplicate(f"{init_path}[{i}].name", container.name)
        names.add(container.name)
        yield from _validate_host_port_conflicts([container], init_path)


def validate_tolerations(tolerations: Sequence[Toleration], path: str) -> FieldErrors:
    """ValidateTolerations (the comparison operators Lt and Gt are behind the alpha
    TaintTolerationComparisonOperators gate, off in v1.36)."""
    for i, toleration in enumerate(tolerations):
        where = f"{path}[{i}]"
        if toleration.key:
            yield from validate_label_name(toleration.key, f"{where}.key")
        if not toleration.key and toleration.operator != "Exists":
            yield invalid(
                f"{where}.operator",
                toleration.operator,
                'operator must be Exists when `key` is empty, which means "match all values and '
                'all keys"',
            )
        if toleration.toleration_seconds is not None and toleration.effect != "NoExecute":
            yield invalid(
                f"{where}.effect",
                toleration.effect,
                "effect must be 'NoExecute' when `tolerationSeconds` is set",
            )
        if toleration.operator in ("Equal", ""):
            errors = label_value_errors(toleration.value)
            if errors:
                yield invalid(f"{where}.operator", toleration.value, ";".join(errors))
        elif toleration.operator == "Exists":
            if toleration.value:
                yield invalid(
                    f"{where}.operator",
                    toleration.value,
                    "value must be empty when `operator` is 'Exists'",
                )
        elif toleration.operator in ("Lt", "Gt"):
            yield not_supported(
                f"{where}.operator", toleration.operator, ("Equal", "Exists", "Lt", "Gt")
            )
        else:
            yield not_supported(f"{where}.operator", toleration.operator, ("Equal", "Exists"))
        if toleration.effect:
            yield from validate_taint_effect(toleration.effect, f"{where}.effect")


def validate_taint_effect(effect: str, path: str) -> FieldErrors:
    """validateTaintEffect (an empty effect is the caller's to allow or not)."""
    if not effect:
        yield required(path)
    elif effect not in _TAINT_EFFECTS:
        yield not_supported(path, effect, _TAINT_EFFECTS)


def validate_preemption_policy(policy: str, path: str) -> FieldErrors:
    """ValidatePreemptionPolicy."""
    if not policy:
        yield required(path)
    elif policy not in _PREEMPTION_POLICIES:
        yield not_supported(path, policy, _PREEMPTION_POLICIES)


def validate_pod_spec(spec: PodSpec, labels: Mapping[str, str], path: str) -> FieldErrors:
    """ValidatePodSpec, for the fields simulate reads; `labels` are the pod's own
    (topology spread's matchLabelKeys are merged from them)."""
    yield from _validate_containers(spec, path)
    if spec.resources is not None:
        if spec.resources.claims:
            yield (
                f"{path}.resources.claims",
                "Forbidden: claims may not be set for Resources at pod-level",
            )
        yield from validate_requirements(spec.resources, f"{path}.resources", pod_level=True)
    if spec.host_network:
        for i, container in enumerate(spec.containers):
            for j, port in enumerate(container.ports):
                if port.host_port not in (0, port.container_port):
                    yield invalid(
                        f"{path}.containers[{i}].ports[{j}].hostPort",
                        port.host_port,
                        "must match `containerPort` when `hostNetwork` is true",
                    )
    yield from validate_labels(spec.node_selector, f"{path}.nodeSelector")
    yield from validate_affinity(spec.affinity, f"{path}.affinity", labels)
    seen_gates: set[str] = set()
    for i, gate in enumerate(spec.scheduling_gates):
        yield from invalid_each(
            f"{path}.schedulingGates[{i}]", gate.name, qualified_name_errors(gate.name)
        )
        if gate.name in seen_gates:
            yield duplicate(f"{path}.schedulingGates[{i}]", gate.name)
        seen_gates.add(gate.name)
    yield from validate_topology_spread(
        spec.topology_spread_constraints, f"{path}.topologySpreadConstraints", labels
    )
    if spec.node_name:
        yield from invalid_each(
            f"{path}.nodeName", spec.node_name, name_is_dns_subdomain(spec.node_name, False)
        )
    yield from validate_tolerations(spec.tolerations, f"{path}.tolerations")
    if spec.priority_class_name:
        yield from invalid_each(
            f"{path}.priorityClassName",
            spec.priority_class_name,
            name_is_dns_subdomain(spec.priority_class_name, False),
        )
    if spec.preemption_policy is not None:
        yield from validate_preemption_policy(spec.preemption_policy, f"{path}.preemptionPolicy")
    if spec.overhead:
        # validateOverhead: the container rules, the overhead taken as limits.
        yield from validate_requirements(
            ResourceRequirements(limits=dict(spec.overhead)), f"{path}.overhead"
        )
