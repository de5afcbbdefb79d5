"""HTTPExtender: a scheduler extender called over HTTP (pkg/scheduler/extender.go in
kube-scheduler v1.36.3), and buildExtenders (scheduler.go).

The wire format is extenderv1's: Go's default JSON field names ("Pod", "Nodes",
"NodeNames", "FailedNodes", ...), which encoding/json matches without regard to
case; so does this client when it reads an answer. Failures carry the texts
kube-scheduler's Go HTTP client gives them, because they end up in FailedScheduling
events: a refused connection, a timeout, a status other than 200.
"""

from __future__ import annotations

import errno
import logging
import os
import ssl
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import msgspec

from kubesched.api.objects import Node, Pod
from kubesched.framework.extender import (
    MAX_EXTENDER_PRIORITY,
    ExtenderConfig,
    ExtenderError,
    ExtenderTLS,
    FilterResult,
    Victims,
    managed_resources_requested,
)

if TYPE_CHECKING:
    import httpx

log = logging.getLogger("kubesched.extender")

# An answer larger than this fails the verb rather than filling the memory: a
# NodeList of 15,000 nodes is well under it.
MAX_ANSWER_BYTES = 256 * 1024 * 1024

_decoder = msgspec.json.Decoder()


def _get(answer: Mapping[str, Any], name: str) -> Any:
    """Field `name` of a decoded answer, matched as encoding/json matches: exactly,
    else without regard to case."""
    if name in answer:
        return answer[name]
    lowered = name.lower()
    for key, value in answer.items():
        if key.lower() == lowered:
            return value
    return None


@contextmanager
def _pem_files(tls: ExtenderTLS) -> Iterator[tuple[str, str]]:
    """The client certificate and key as files (ssl loads a chain only from files);
    certData and keyData take precedence over certFile and keyFile."""
    made: list[str] = []
    try:
        paths = []
        for data, path in ((tls.cert_data, tls.cert_file), (tls.key_data, tls.key_file)):
            if data:
                fd, name = tempfile.mkstemp(suffix=".pem")
                with os.fdopen(fd, "wb") as out:
                    out.write(data)
                made.append(name)
                paths.append(name)
            else:
                paths.append(path)
        yield paths[0], paths[1]
    finally:
        for name in made:
            os.unlink(name)


def _tls_context(config: ExtenderConfig) -> ssl.SSLContext | bool:
    """httpx's `verify` for an extender (makeTransport in extender.go): HTTPS
    without a CA skips verification, as upstream does."""
    tls = config.tls or ExtenderTLS()
    has_ca = bool(tls.ca_file or tls.ca_data)
    insecure = tls.insecure or (config.enable_https and not has_ca)
    context = ssl.create_default_context(
        cafile=tls.ca_file or None,
        cadata=tls.ca_data.decode() if tls.ca_data else None,
    )
    if insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if tls.cert_data or tls.cert_file:
        with _pem_files(tls) as (cert, key):
            context.load_cert_chain(cert, key or None)
    return context


class HTTPExtender:
    """One extender of the configuration file (HTTPExtender upstream)."""

    def __init__(self, config: ExtenderConfig) -> None:
        # Lazy: httpx (and the CLI modules it imports) only for a configuration with extenders.
        import httpx

        self.config = config
        self._url = config.url_prefix.rstrip("/")
        self._client = httpx.Client(
            timeout=config.http_timeout,
            verify=_tls_context(config),
            headers={"Content-Type": "application/json"},
        )
        # tlsConfig.serverName: the name sent in SNI and the certificate is checked against.
        server_name = config.tls.server_name if config.tls else ""
        self._extensions = {"sni_hostname": server_name} if server_name else {}

    # --- what the scheduler asks ---------------------------------------------------

    @property
    def name(self) -> str:
        return self.config.url_prefix

    @property
    def ignorable(self) -> bool:
        return self.config.ignorable

    @property
    def is_filter(self) -> bool:
        return bool(self.config.filter_verb)

    @property
    def is_prioritizer(self) -> bool:
        return bool(self.config.prioritize_verb)

    @property
    def is_binder(self) -> bool:
        return bool(self.config.bind_verb)

    @property
    def supports_preemption(self) -> bool:
        return bool(self.config.preempt_verb)

    def is_interested(self, pod: Pod) -> bool:
        return managed_resources_requested(pod, self.config.managed_resources)

    def close(self) -> None:
        self._client.close()

    # --- verbs ---------------------------------------------------------------------

    def _args(self, pod: Pod, nodes: Sequence[Node]) -> dict[str, Any]:
        """ExtenderArgs: node names for a nodeCacheCapable extender, else the Nodes."""
        if self.config.node_cache_capable:
            return {"Pod": pod, "Nodes": None, "NodeNames": [n.metadata.name for n in nodes]}
        return {"Pod": pod, "Nodes": {"metadata": {}, "items": list(nodes)}, "NodeNames": None}

    def filter(self, pod: Pod, nodes: Sequence[Node]) -> FilterResult:
        if not self.config.filter_verb:
            return FilterResult([n.metadata.name for n in nodes])
        answer = self._send(self.config.filter_verb, self._args(pod, nodes))
        error = _get(answer, "Error")
        if error:
            raise ExtenderError(str(error))
        given = {n.metadata.name for n in nodes}
        names: list[str] = []
        node_names = _get(answer, "NodeNames")
        node_list = _get(answer, "Nodes")
        if self.config.node_cache_capable and node_names is not None:
            names = [str(n) for n in _list(node_names, "NodeNames", self.name)]
        elif node_list is not None:
            items = _get(_object(node_list, "Nodes", self.name), "items") or []
            for item in _list(items, "Nodes.items", self.name):
                meta = _get(_object(item, "Nodes.items[]", self.name), "metadata") or {}
                names.append(str(_get(_object(meta, "metadata", self.name), "name") or ""))
        for name in names:
            # Upstream checks this for node names only; a Node it does not know
            # would be scheduled to as an empty NodeInfo, so it is refused alike.
            if name not in given:
                raise ExtenderError(
                    f"extender {self.name!r} claims a filtered node {name!r} which is not "
                    "found in the input node list"
                )
        return FilterResult(
            names,
            _messages(_get(answer, "FailedNodes"), "FailedNodes", self.name),
            _messages(
                _get(answer, "FailedAndUnresolvableNodes"), "FailedAndUnresolvableNodes", self.name
            ),
            as_new_nodes=not (self.config.node_cache_capable and node_names is not None)
            and node_list is not None,
        )

    def prioritize(self, pod: Pod, nodes: Sequence[Node]) -> tuple[dict[str, int], int]:
        if not self.config.prioritize_verb:
            return {n.metadata.name: 0 for n in nodes}, 0
        answer = self._send(self.config.prioritize_verb, self._args(pod, nodes), expect=list)
        scores: dict[str, int] = {}
        for item in _list(answer, "HostPriorityList", self.name):
            entry = _object(item, "HostPriority", self.name)
            host, score = _get(entry, "Host"), _get(entry, "Score")
            if not isinstance(score, int) or isinstance(score, bool):
                raise ExtenderError(
                    f"extender {self.name}: score of host {host!r} is not an integer: {score!r}"
                )
            # Upstream adds any score it is given; one outside the protocol's range
            # would outweigh every plugin, so it fails the verb instead.
            if not 0 <= score <= MAX_EXTENDER_PRIORITY:
                raise ExtenderError(
                    f"extender {self.name}: score {score} of host {host!r} is out of range "
                    f"[0, {MAX_EXTENDER_PRIORITY}]"
                )
            scores[str(host)] = score
        return scores, self.config.weight

    def bind(self, pod: Pod, node: str) -> None:
        args = {
            "PodName": pod.metadata.name,
            "PodNamespace": pod.metadata.namespace,
            "PodUID": pod.metadata.uid,
            "Node": node,
        }
        answer = self._send(self.config.bind_verb, args)
        error = _get(answer, "Error")
        if error:
            raise ExtenderError(str(error))

    def process_preemption(
        self,
        pod: Pod,
        victims: Mapping[str, Victims],
        pods_on_node: Mapping[str, Sequence[Pod]],
    ) -> dict[str, Victims]:
        if not self.config.preempt_verb:
            raise ExtenderError(
                f"preempt verb is not defined for extender {self.name} but run into "
                "ProcessPreemption"
            )
        if self.config.node_cache_capable:
            meta = {
                node: {
                    "Pods": [{"UID": p.metadata.uid} for p in v.pods],
                    "NumPDBViolations": v.num_pdb_violations,
                }
                for node, v in victims.items()
            }
            args: dict[str, Any] = {"Pod": pod, "NodeNameToMetaVictims": meta}
        else:
            full = {
                node: {"Pods": v.pods, "NumPDBViolations": v.num_pdb_violations}
                for node, v in victims.items()
            }
            args = {"Pod": pod, "NodeNameToVictims": full}
        answer = self._send(self.config.preempt_verb, args)
        result: dict[str, Victims] = {}
        chosen = _get(answer, "NodeNameToMetaVictims") or {}
        for node, entry in _object(chosen, "NodeNameToMetaVictims", self.name).items():
            if node not in pods_on_node:
                raise ExtenderError(f'nodeinfo not found for node name "{node}"')
            on_node = {p.metadata.uid: p for p in pods_on_node[node]}
            meta_victims = _object(entry or {}, "MetaVictims", self.name)
            pods: list[Pod] = []
            for meta_pod in _list(_get(meta_victims, "Pods") or [], "Pods", self.name):
                uid = str(_get(_object(meta_pod, "MetaPod", self.name), "UID") or "")
                if uid not in on_node:
                    raise ExtenderError(
                        f"extender: {self.name} claims to preempt pod (UID: &{{{uid}}}) on "
                        f"node: {node}, but the pod is not found on that node"
                    )
                pods.append(on_node[uid])
            violations = _get(meta_victims, "NumPDBViolations") or 0
            result[node] = Victims(pods, int(violations))
        return result

    # --- the wire ------------------------------------------------------------------

    def _send(self, action: str, args: Mapping[str, Any], expect: type = dict) -> Any:
        """POST args as JSON to urlPrefix/action and decode the answer (send in
        extender.go), with the Go client's error texts."""
        import httpx  # lazy, as in __init__ (imported by then)

        url = f"{self._url}/{action}"
        body = msgspec.json.encode(args)
        try:
            with self._client.stream(
                "POST", url, content=body, extensions=self._extensions
            ) as response:
                if response.status_code != 200:
                    raise ExtenderError(
                        f"failed {action} with extender at URL {url}, code {response.status_code}"
                    )
                data = bytearray()
                for chunk in response.iter_bytes():
                    data += chunk
                    if len(data) > MAX_ANSWER_BYTES:
                        raise ExtenderError(
                            f"extender {self.name}: the answer to {action} is over "
                            f"{MAX_ANSWER_BYTES} bytes"
                        )
        except httpx.TimeoutException:
            raise ExtenderError(
                f'Post "{url}": context deadline exceeded '
                "(Client.Timeout exceeded while awaiting headers)"
            ) from None
        except httpx.ConnectError as exc:
            raise ExtenderError(f'Post "{url}": {_dial_error(url, exc)}') from None
        except httpx.HTTPError as exc:
            raise ExtenderError(f'Post "{url}": {exc}') from None
        try:
            answer = _decoder.decode(bytes(data))
        except msgspec.DecodeError as exc:
            raise ExtenderError(
                f"extender {self.name}: the answer to {action} is not JSON: {exc}"
            ) from None
        if answer is None:
            return expect()
        if not isinstance(answer, expect):
            raise ExtenderError(
                f"extender {self.name}: the answer to {action} is not a JSON "
                f"{'array' if expect is list else 'object'}"
            )
        return answer


def _dial_error(url: str, exc: httpx.ConnectError) -> str:
    """Go's net.Dial text for the common case, a refused connection."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, OSError) and cause.errno == errno.ECONNREFUSED:
            import httpx  # lazy, as in HTTPExtender.__init__ (imported by then)

            address = httpx.URL(url)
            return f"dial tcp {address.host}:{address.port}: connect: connection refused"
        cause = cause.__cause__ or cause.__context__
    return str(exc) or type(exc).__name__


def _object(value: Any, what: str, extender: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ExtenderError(f"extender {extender}: {what} is not a JSON object")
    return value


def _list(value: Any, what: str, extender: str) -> list[Any]:
    if not isinstance(value, list):
        raise ExtenderError(f"extender {extender}: {what} is not a JSON array")
    return value


def _messages(value: Any, what: str, extender: str) -> dict[str, str]:
    if value is None:
        return {}
    return {str(k): str(v) for k, v in _object(value, what, extender).items()}


def build_extenders(configs: Sequence[ExtenderConfig]) -> list[HTTPExtender]:
    """The configuration's extenders, ignorable ones last (buildExtenders in
    scheduler.go): a failing ignorable extender is skipped, so it goes after the
    others."""
    ordered = sorted(configs, key=lambda c: c.ignorable)
    return [HTTPExtender(c) for c in ordered]
