"""NodeDeclaredFeatures filter plugin."""

from kubesched.plugins.nodedeclaredfeatures.plugin import NodeDeclaredFeatures

__all__ = ["NodeDeclaredFeatures"]
