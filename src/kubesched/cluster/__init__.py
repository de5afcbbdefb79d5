"""Sources of truth: the in-memory cluster (simulate) and the Kubernetes API (run)."""
