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
import os
import shutil
import ssl
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from kubernetes_asyncio import config as kconfig
from kubernetes_asyncio.client import Configuration
from kubernetes_asyncio.config import kube_config

from kubesched.server.memfile import memory_file

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
