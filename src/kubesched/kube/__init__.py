"""Talking to a real kube-apiserver: connection, list-and-watch, binding, events, leases."""
