"""Where the API server is and how to prove who we are.

kubeconfig parsing and every auth flavour (tokens, client certificates, exec
credential plugins, in-cluster service-account tokens that rotate) are left to
kubernetes_asyncio's config loaders; kubesched only takes the result and builds
its own lean HTTP client on it.

Credentials never rest on shared disk. The loader writes inline certificates and
keys (``client-key-data`` and the like) to temporary files it removes only at
exit, so a kill -9 leaves them in $TMPDIR; kube-scheduler keeps them in memory.
Here the inline data goes to anonymous memory files (memfd) that the loader reads
as paths and that are closed once the TLS context holds them; whatever else the
loader writes (an exec plugin's client certificate) goes to a private 0700
directory removed as soon as the context is built.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import importlib
import importlib.util
import os
import shutil
import ssl
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any

from kubesched.server.memfile import memory_file

# The loader modules of kubernetes_asyncio, without its generated API client.
_CLIENT = "kubernetes_asyncio.client"
_HOLLOW = ("kubernetes_asyncio", _CLIENT)
_LOADERS = "kubernetes_asyncio.config"


class _ApiClient:
    """Stands in for client.ApiClient in kube_config, where only
    new_client_from_config* build one (kubesched calls neither): builds the real one."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        # Lazy: the whole generated client, only if this is ever called.
        from kubernetes_asyncio.client import ApiClient

        return ApiClient(*args, **kwargs)


def _import_loaders() -> tuple[ModuleType, ModuleType, Any]:
    """kubernetes_asyncio.config, its kube_config module and client.Configuration,
    without the generated client.

    kubernetes_asyncio/__init__.py imports the whole generated client (every API
    class and model: about 1.5 s, most of `kubesched run`'s and its API worker's
    start-up), and the loaders import their Configuration from it. Here the package
    and its client package are left empty in sys.modules while the loaders are
    imported (the client holding only Configuration and a stand-in ApiClient), then
    taken out again: a later `import kubernetes_asyncio` (an out-of-tree plugin's)
    imports the whole package as usual, and these modules are part of it. If the
    package is imported already, or this fails (another release), the usual import.
    """
    if _HOLLOW[0] not in sys.modules:
        before = set(sys.modules)
        hollow: dict[str, ModuleType] = {}
        try:
            for name in _HOLLOW:
                spec = importlib.util.find_spec(name)
                if spec is None or spec.submodule_search_locations is None:
                    raise ImportError(f"{name} is not a package")
                hollow[name] = sys.modules[name] = importlib.util.module_from_spec(spec)
            client = hollow[_CLIENT]
            configuration = importlib.import_module(f"{_CLIENT}.configuration")
            client.Configuration = configuration.Configuration  # type: ignore[attr-defined]
            client.ApiClient = _ApiClient  # type: ignore[attr-defined]
            importlib.import_module(_LOADERS)
        except Exception:
            # Whatever was imported meanwhile is forgotten; imported as usual below.
            for name in set(sys.modules) - before:
                del sys.modules[name]
        finally:
            for name, module in hollow.items():
                if sys.modules.get(name) is module:
                    del sys.modules[name]
    if _LOADERS not in sys.modules:
        importlib.import_module(_LOADERS)
    modules = sys.modules
    configuration = modules[f"{_CLIENT}.configuration"]
    return modules[_LOADERS], modules[f"{_LOADERS}.kube_config"], configuration.Configuration


if TYPE_CHECKING:
    from kubernetes_asyncio import config as kconfig
    from kubernetes_asyncio.client import Configuration
    from kubernetes_asyncio.config import kube_config
else:
    kconfig, kube_config, Configuration = _import_loaders()

IN_CLUSTER_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"


class KubeConfigError(Exception):
    """No usable kubeconfig or in-cluster config."""


@dataclass
class Connection:
    host: str
    ssl_context: ssl.SSLContext | bool
    _configuration: Configuration
    _kubeconfig: str | None = None
    _context: str | None = None
    _in_cluster: bool = False
    extra_headers: dict[str, str] = field(default_factory=dict)

    def authorization(self) -> str | None:
        """The Authorization header value, refreshed when its source says so."""
        cfg = self._configuration
        hook: Any = cfg.refresh_api_key_hook
        if hook is not None:
            hook(cfg)
        token = cfg.api_key.get("BearerToken") or cfg.api_key.get("authorization")
        return str(token) if token else None

    async def reload(self) -> None:
        """Re-run the loader: a new token from an exec plugin, a rotated file."""
        fresh = await load_connection(self._kubeconfig, self._context, self._in_cluster)
        self._configuration = fresh._configuration
        self.ssl_context = fresh.ssl_context


def _ssl_context(cfg: Configuration) -> ssl.SSLContext | bool:
    if not cfg.verify_ssl:
        return False
    context = ssl.create_default_context(cafile=cfg.ssl_ca_cert or None)
    if cfg.cert_file:
        context.load_cert_chain(cfg.cert_file, cfg.key_file)
    return context


# The kubeconfig fields whose inline (base64) data the loader would write to a file.
_INLINE = {"users": ("client-certificate", "client-key"), "clusters": ("certificate-authority",)}


def _inline_to_memory(merged: Any, stack: contextlib.ExitStack, where: str) -> None:
    """Point every ``X-data`` field of the merged kubeconfig at a memory file of its
    decoded content (as field ``X``, which the loader reads as a path)."""
    for section, fields in _INLINE.items():
        entry_key = section[:-1]  # "users" -> "user"
        for node in merged.value.get(section) or []:
            entry = node.value if hasattr(node, "value") else node
            body = entry.get(entry_key)
            if not isinstance(body, dict):
                continue
            for name in fields:
                data = body.get(f"{name}-data")
                if not data:
                    continue
                try:
                    content = base64.standard_b64decode(str(data).encode())
                except (binascii.Error, ValueError) as exc:
                    raise KubeConfigError(
                        f"{where}: {entry_key} {entry.get('name')!r}: {name}-data is not "
                        f"valid base64: {exc}"
                    ) from None
                del body[f"{name}-data"]
                body[name] = stack.enter_context(memory_file(content, f"kubesched-{name}"))


@contextlib.contextmanager
def _private_dir() -> Iterator[str]:
    """A 0700 directory for what the loader still writes, removed on the way out;
    the loader's memo of those files is forgotten too (it would hand the removed
    paths back on the next load)."""
    path = tempfile.mkdtemp(prefix="kubesched-credentials-")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
        # kube_config._temp_files: content -> file, reused by later loads.
        memo: dict[str, str] = kube_config._temp_files
        for content, file in list(memo.items()):
            if file.startswith(path + os.sep):
                del memo[content]


async def _load_kubeconfig(
    cfg: Configuration, kubeconfig: str | None, context: str | None, stack: contextlib.ExitStack
) -> None:
    """load_kube_config(persist_config=False), inline credentials kept in memory."""
    paths = kubeconfig or os.environ.get("KUBECONFIG") or os.path.expanduser("~/.kube/config")
    merger = kube_config.KubeConfigMerger(paths)
    if merger.config is None:
        raise kconfig.ConfigException(f"Invalid kube-config file. No configuration found: {paths}")
    _inline_to_memory(merger.config, stack, paths)
    loader = kube_config.KubeConfigLoader(
        config_dict=merger.config,
        active_context=context,
        config_base_path=None,
        temp_file_path=stack.enter_context(_private_dir()),
    )
    await loader.load_and_set(cfg)


async def load_connection(
    kubeconfig: str | None = None, context: str | None = None, in_cluster: bool | None = None
) -> Connection:
    """kubeconfig (explicit, $KUBECONFIG or ~/.kube/config), else in-cluster config."""
    cfg = Configuration()
    use_in_cluster = in_cluster
    if use_in_cluster is None:
        has_file = bool(kubeconfig or os.environ.get("KUBECONFIG")) or os.path.exists(
            os.path.expanduser("~/.kube/config")
        )
        use_in_cluster = not has_file and os.path.exists(IN_CLUSTER_TOKEN)
    where = "in-cluster config" if use_in_cluster else (kubeconfig or "the default kubeconfig")
    # The memory files and the private directory last until the TLS context holds
    # the credentials.
    with contextlib.ExitStack() as stack:
        try:
            if use_in_cluster:
                kconfig.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
            else:
                await _load_kubeconfig(cfg, kubeconfig, context, stack)
            ssl_context = _ssl_context(cfg)
        except KubeConfigError:
            raise
        except Exception as exc:
            # One line: a YAML error's text spans several (mark, snippet).
            detail = " ".join(str(exc).split())
            raise KubeConfigError(f"cannot load {where}: {detail}") from exc
    return Connection(
        str(cfg.host).rstrip("/"), ssl_context, cfg, kubeconfig, context, bool(use_in_cluster)
    )
