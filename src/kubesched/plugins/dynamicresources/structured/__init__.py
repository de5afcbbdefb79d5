"""The structured-parameters allocator (k8s.io/dynamic-resource-allocation/structured)."""
