"""VolumeZone filter plugin."""

from kubesched.plugins.volumezone.plugin import VolumeZone

__all__ = ["VolumeZone"]
