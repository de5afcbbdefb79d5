"""Where the API server is and how to prove who we are.

kubeconfig parsing and every auth flavour (tokens, client certificates, exec
credential plugins, in-cluster service-account tokens that rotate) are left to
kubernetes_asyncio's config loaders; kubesched only takes the result and builds
its own lean HTTP client on it.
"""

from __future__ import annotations

import os
import ssl
from dataclasses import dataclass, field
from typing import Any

from kubernetes_asyncio import config as kconfig
from kubernetes_asyncio.client import Configuration

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
    try:
        if use_in_cluster:
            kconfig.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
        else:
            await kconfig.load_kube_config(
                config_file=kubeconfig,
                context=context,
                client_configuration=cfg,
                persist_config=False,
            )
    except Exception as exc:
        where = "in-cluster config" if use_in_cluster else (kubeconfig or "the default kubeconfig")
        raise KubeConfigError(f"cannot load {where}: {exc}") from exc
    return Connection(
        str(cfg.host).rstrip("/"), _ssl_context(cfg), cfg, kubeconfig, context, bool(use_in_cluster)
    )
