"""VolumeRestrictions filter plugin."""

from kubesched.plugins.volumerestrictions.plugin import VolumeRestrictions

__all__ = ["VolumeRestrictions"]
