"""Kubernetes objects decoded into lean typed structs, quantities and pod requests."""
