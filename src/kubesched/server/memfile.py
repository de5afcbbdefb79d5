"""Key material in memory, never in a file.

``ssl.SSLContext.load_cert_chain`` and ``cafile=`` read only files; a key written
to a temporary file stays on disk if the process is killed before it removes it.
``memory_file`` gives a path to anonymous memory instead (memfd_create, read back
through /proc/self/fd), which vanishes with the process.
"""

from __future__ import annotations

import contextlib
import os
import ssl
from collections.abc import Iterator

__all__ = ["load_cert_chain_in_memory", "memory_file"]


@contextlib.contextmanager
def memory_file(content: bytes, name: str = "kubesched-tls") -> Iterator[str]:
    """A path to CONTENT that lives in memory only, valid inside the block."""
    fd = os.memfd_create(name, os.MFD_CLOEXEC)
    try:
        view = memoryview(content)
        while view:
            view = view[os.write(fd, view) :]
        yield f"/proc/self/fd/{fd}"
    finally:
        os.close(fd)


def load_cert_chain_in_memory(context: ssl.SSLContext, cert_pem: bytes, key_pem: bytes) -> None:
    """context.load_cert_chain from PEM bytes, without a file on disk."""
    with (
        memory_file(cert_pem, "kubesched-cert") as cert,
        memory_file(key_pem, "kubesched-key") as key,
    ):
        context.load_cert_chain(cert, key)
