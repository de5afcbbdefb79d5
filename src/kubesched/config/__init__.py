"""KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1): the file kube-scheduler reads."""

from kubesched.config.file import ConfigError, SchedulerConfig, load_config

__all__ = ["ConfigError", "SchedulerConfig", "load_config"]
