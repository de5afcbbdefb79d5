from kubesched.plugins.defaultbinder.plugin import DefaultBinder

__all__ = ["DefaultBinder"]
