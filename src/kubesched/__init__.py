"""kubesched: a Kubernetes scheduler in Python with kube-scheduler's Scheduling Framework."""

__version__ = "0.1.0"

# The Kubernetes release whose kube-scheduler kubesched follows (behaviour, messages,
# limits, metric names): hack/k8s-version, which the hack/ scripts build and test against.
KUBERNETES_VERSION = "v1.36.3"
