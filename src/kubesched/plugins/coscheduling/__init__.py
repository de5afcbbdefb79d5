"""Coscheduling (scheduler-plugins v0.35.4-devel), with a whole-group trial placement."""

from kubesched.plugins.coscheduling.plugin import Coscheduling

__all__ = ["Coscheduling"]
