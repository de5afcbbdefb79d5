"""YAML read with limits, for manifests and configuration files alike.

PyYAML's C composer recurses once per nesting level and overflows the C stack on
deeply nested input (a segfault, not an exception), and aliases let a few bytes
stand for an exponential tree ("billion laughs"): PyYAML shares the aliased
objects, but everything after it (msgspec, hashing, the report) walks the
expanded tree. Texts that may do either are checked on libyaml's events first,
which it produces without recursion.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

try:
    from yaml import CSafeLoader as _SafeLoader
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml import SafeLoader as _SafeLoader  # type: ignore[assignment]

# Limits on what one input may cost, each reported as a problem of its file or
# document, never a crash (issue #12). The depth is below Python's recursion limit,
# which the decoders (PyYAML's composer, msgspec) and the checks after them recurse
# into; kube objects nest a few dozen levels at most. The apiserver's decoders stop
# at 10000 (go-yaml's max_flow_level and max_indents, encoding/json's
# maxNestingDepth); libyaml's composer overflows the C stack well before that.
MAX_DEPTH = 1000


class YamlLimitError(ValueError):
    """A YAML text past a limit: too deep, or too much of it from aliases."""


class DuplicateKeyError(yaml.YAMLError):
    """A mapping names one key twice. PyYAML keeps the last value silently; the
    apiserver's strict decoding (sigs.k8s.io/yaml, goyaml.v2 UnmarshalStrict)
    refuses the object with `line N: key "k" already set in map`."""

    def __init__(self, key: object, line: int) -> None:
        super().__init__(f"key {json.dumps(str(key))} already set in map")
        self.line = line  # 0-based, within the text the loader was given


class YamlLoader(_SafeLoader):
    """The safe loader without YAML 1.1 timestamps (`creationTimestamp:
    2024-01-01T00:00:00Z` stays the string the API and msgspec expect), and
    refusing duplicate keys in a mapping."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[tuple[str, object]] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<: *base` keys are merged, and may be overridden
            key = (
                key_node.tag,
                key_node.value if isinstance(key_node.value, str) else id(key_node),
            )
            if key in seen:
                raise DuplicateKeyError(key_node.value, key_node.start_mark.line)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


YamlLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in _SafeLoader.yaml_implicit_resolvers.items()
}


def may_exceed_limits(text: str, lines: list[str]) -> bool:
    """Whether the text may nest deeper than MAX_DEPTH or use aliases: the check
    of its events (yaml_limits) is then needed. A collection nests in another by
    indentation, a `- ` or a flow bracket, so without anchors the depth is at most
    the longest line plus the brackets."""
    if "&" in text or "*" in text:
        return True
    brackets = text.count("[") + text.count("{")
    return brackets + max(map(len, lines), default=0) >= MAX_DEPTH


# go-yaml's allowedAliasRatio (decode.go): how much of a document may come from
# alias expansion, 99% of a small one down to 10% of one of 4,000,000 nodes.
_ALIAS_RATIO_LOW = 400_000
_ALIAS_RATIO_HIGH = 4_000_000


def _allowed_alias_ratio(nodes: int) -> float:
    if nodes <= _ALIAS_RATIO_LOW:
        return 0.99
    if nodes >= _ALIAS_RATIO_HIGH:
        return 0.10
    return 0.99 - 0.89 * (nodes - _ALIAS_RATIO_LOW) / (_ALIAS_RATIO_HIGH - _ALIAS_RATIO_LOW)


def yaml_limits(chunk: str) -> str | None:
    """Why a YAML text must not be composed, or None: nesting deeper than
    MAX_DEPTH (libyaml's composer recurses in C), an alias inside its own anchor,
    or excessive aliasing ("billion laughs": PyYAML shares the aliased objects, but
    everything after it walks the expanded tree). Decided on libyaml's events, which
    it produces without recursion; syntax errors are left to the loader."""
    depth = 0
    nodes = aliased = 0  # of the current document, expanded
    sizes: dict[str, int] = {}  # anchor -> nodes of its expanded value
    open_collections: list[tuple[str | None, int]] = []  # (anchor, `nodes` at its start)
    try:
        for event in yaml.parse(chunk, Loader=YamlLoader):
            if isinstance(event, yaml.CollectionStartEvent):
                nodes += 1
                depth += 1
                if depth > MAX_DEPTH:
                    return f"YAML nested more than {MAX_DEPTH} levels deep"
                open_collections.append((event.anchor, nodes))
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
                anchor, start = open_collections.pop()
                if anchor is not None:
                    sizes[anchor] = nodes - start + 1
            elif isinstance(event, yaml.ScalarEvent):
                nodes += 1
                if event.anchor is not None:
                    sizes[event.anchor] = 1
            elif isinstance(event, yaml.AliasEvent):
                size = sizes.get(event.anchor or "")
                if size is None:
                    if any(anchor == event.anchor for anchor, _ in open_collections):
                        # go-yaml: "anchor '%s' value contains itself"
                        return f"YAML anchor {event.anchor!r} value contains itself"
                    continue  # an unknown alias: the composer reports it
                nodes += size
                aliased += size
                if aliased > 100 and nodes > 1000 and aliased / nodes > _allowed_alias_ratio(nodes):
                    return "YAML document contains excessive aliasing"
            elif isinstance(event, yaml.DocumentStartEvent):
                nodes = aliased = 0
                sizes.clear()
    except yaml.YAMLError:
        return None
    return None


def load_bounded(text: str) -> object:
    """yaml.safe_load for one document, with the limits; raises YamlLimitError or
    yaml.YAMLError."""
    if may_exceed_limits(text, text.split("\n")):
        refused = yaml_limits(text)
        if refused is not None:
            raise YamlLimitError(refused)
    return yaml.load(text, Loader=YamlLoader)
