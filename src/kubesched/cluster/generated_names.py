"""What the apiserver makes up for objects the input leaves without: uids, and
names from `metadata.generateName`.

Everything is deterministic (derived from kind, namespace and name, or from a
seed), so loading the same input twice gives the same cluster. Shared by the
manifest loader, the workload controllers, admission and the storage objects.
"""

from __future__ import annotations

import hashlib
import uuid

# utilrand's alphabet: no vowels (no words), no 0/1/3 (no look-alikes).
_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"
# A generated name is generateName (at most 58 characters) plus 5 random ones.
_MAX_GENERATE_NAME_BASE = 58
_UID_NAMESPACE = uuid.NAMESPACE_URL


def _uid(kind: str, namespace: str, name: str) -> str:
    return str(uuid.uuid5(_UID_NAMESPACE, f"kubesched/{kind}/{namespace}/{name}"))


def _safe_encode(text: str) -> str:
    """rand.SafeEncodeString: each byte mapped into the alphabet."""
    return "".join(_ALPHANUMS[b % len(_ALPHANUMS)] for b in text.encode())


def _random_chars(seed: str, count: int = 5) -> str:
    """`count` random-looking characters, deterministic in `seed`."""
    digest = hashlib.blake2b(seed.encode(), digest_size=count).digest()
    return "".join(_ALPHANUMS[b % len(_ALPHANUMS)] for b in digest)
