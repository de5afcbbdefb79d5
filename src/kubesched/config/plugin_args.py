"""The built-in plugins' pluginConfig args, decoded and validated when the file is read.

validatePluginConfig upstream: each pluginConfig entry of a profile whose
plugin has an args type is checked, under the entry's path
("profiles[0].pluginConfig[2].args"), whether the profile enables the plugin or
not. A plugin has an args type when its class in the in-tree registry names an
`args_decoder`; the profile then holds the typed args the decoder returned, and
the plugin is built with them (it does not decode them again).

Upstream's validation map names NodeResourcesFit "NodeResourcesFitArgs", so its
args are only refused when the profile is built (NewFit validates them); here
they are refused with the file, like the others'.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.framework.interfaces import ArgsDecoder
from kubesched.plugins.helpers.args import ArgsError
from kubesched.plugins.registry import in_tree_registry

_IN_TREE = in_tree_registry()


def _decoder(name: str) -> ArgsDecoder | None:
    """The args decoder of built-in plugin `name`; None for a plugin without args or
    not built in (out-of-tree plugins read their args themselves)."""
    if name not in _IN_TREE:
        return None
    return _IN_TREE[name].args_decoder


def decode_plugin_args(name: str, args: Mapping[str, Any], path: str) -> object:
    """Plugin `name`'s args at `path` as the plugin is built with them: its typed args
    for a built-in plugin with an args type, else `args` as written. Raises ArgsError
    (the field errors, each under `path`) for args kube-scheduler would refuse."""
    decode = _decoder(name)
    if decode is None:
        return args
    return decode(args, path)


def plugin_args_errors(name: str, args: Mapping[str, Any], path: str) -> list[str]:
    """The field errors of plugin `name`'s args at `path`; none for a plugin
    without an args type (out-of-tree plugins read their args themselves)."""
    try:
        decode_plugin_args(name, args, path)
    except ArgsError as err:
        return list(err.errors)
    return []
