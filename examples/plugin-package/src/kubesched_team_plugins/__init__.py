"""Example kubesched plugins shipped as a Python package (see README.md)."""

from kubesched_team_plugins.prefer_node_label import PreferNodeLabel
from kubesched_team_plugins.team_nodes import TeamNodes

__all__ = ["PreferNodeLabel", "TeamNodes"]
