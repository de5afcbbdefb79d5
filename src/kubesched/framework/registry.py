"""The plugin registry: plugins by name, as a value (frameworkruntime.Registry upstream).

Whoever builds a scheduler assembles one registry (kubesched.plugins.registry has
the in-tree plugins and `default_registry`) and hands it to each profile's
framework, which looks its plugins up there. Out-of-tree plugins come from three
places:

* installed packages, through the `kubesched.plugins` entry-point group, e.g. in
  pyproject:

      [project.entry-points."kubesched.plugins"]
      AppPool = "mypackage.plugins:AppPool"

* files or modules named on the command line (`--plugin path/to/file.py:Class`),
  loaded with `load_plugin_path`;
* classes decorated with `@register` in code that runs before the scheduler is
  built (scripts, tests): `registered_in_code` lists them.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Iterable, Iterator, Mapping
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import TypeVar

from kubesched.framework.interfaces import Plugin

P = TypeVar("P", bound=type[Plugin])

ENTRY_POINT_GROUP = "kubesched.plugins"

# Classes decorated with @register, by name, in the order they were defined.
_in_code: dict[str, type[Plugin]] = {}


class UnknownPluginError(KeyError):
    def __str__(self) -> str:
        return f"unknown plugin {self.args[0]!r}: not built in, not registered, no entry point"


class DuplicatePluginError(ValueError):
    """Registry.Merge's error: two plugins with one name."""


def _check_plugin_class(cls: object, origin: str) -> type[Plugin]:
    if not (isinstance(cls, type) and issubclass(cls, Plugin)):
        raise TypeError(f"{origin} is not a kubesched Plugin class")
    return cls


class Registry(Mapping[str, type[Plugin]]):
    """Plugin classes by name. Entry points are imported when first looked up, so
    that an installed package nobody enables costs nothing."""

    __slots__ = ("_entries",)

    def __init__(self, plugins: Mapping[str, type[Plugin] | EntryPoint] | None = None) -> None:
        self._entries: dict[str, type[Plugin] | EntryPoint] = dict(plugins or {})

    @classmethod
    def of(cls, plugins: Iterable[type[Plugin]]) -> Registry:
        """A registry of classes, each under its `name`."""
        entries: dict[str, type[Plugin] | EntryPoint] = {}
        for plugin in plugins:
            if not plugin.name:
                raise ValueError(f"plugin class {plugin.__qualname__} has no `name`")
            entries[plugin.name] = plugin
        return cls(entries)

    def __getitem__(self, name: str) -> type[Plugin]:
        entry = self._entries.get(name)
        if entry is None:
            raise UnknownPluginError(name)
        if isinstance(entry, EntryPoint):
            # Imported once; the registry keeps the class (a cache, not a new entry).
            entry = self._entries[name] = _check_plugin_class(
                entry.load(), f"entry point {entry.value}"
            )
        return entry

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def updated(self, other: Registry) -> Registry:
        """Both registries' plugins, `other`'s where a name is in both."""
        return Registry({**self._entries, **other._entries})

    def merged(self, other: Registry) -> Registry:
        """Registry.Merge: both registries' plugins; a name in both is an error."""
        clash = sorted(set(self._entries) & set(other._entries))
        if clash:
            raise DuplicatePluginError(f"a plugin named {clash[0]} already exists")
        return Registry({**self._entries, **other._entries})


def register(cls: P) -> P:
    """Class decorator: make a plugin defined in code known by its `name` to the
    registries built after it (`registered_in_code`)."""
    if not cls.name:
        raise ValueError(f"plugin class {cls.__qualname__} has no `name`")
    _in_code[cls.name] = cls
    return cls


def registered_in_code() -> Registry:
    return Registry(dict(_in_code))


def installed_plugins() -> Registry:
    """The plugins of installed packages (the `kubesched.plugins` entry points)."""
    return Registry({ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)})


def load_plugin_path(target: str) -> type[Plugin]:
    """The plugin class named by "module:Class" or "path/to/file.py:Class" (--plugin)."""
    module_name, _, attr = target.rpartition(":")
    if not module_name or not attr:
        raise ValueError(f"{target!r}: expected MODULE:CLASS or path/to/file.py:CLASS")
    if module_name.endswith(".py"):
        path = Path(module_name)
        spec = importlib.util.spec_from_file_location(f"kubesched_user_{path.stem}", path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(module_name)
    return _check_plugin_class(getattr(module, attr), target)
