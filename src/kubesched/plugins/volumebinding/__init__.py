"""VolumeBinding: PreFilter, Filter, Reserve, PreBind (and a Score that skips)."""

from kubesched.plugins.volumebinding.plugin import VolumeBinding

__all__ = ["VolumeBinding"]
