"""kubesched: a Kubernetes scheduler in Python with kube-scheduler's Scheduling Framework."""

__version__ = "0.1.0"
