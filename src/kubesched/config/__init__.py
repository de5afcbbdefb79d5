"""KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1): the file kube-scheduler reads."""

from kubesched.config.file import ConfigError, SchedulerConfig, check_plugin_names, load_config

__all__ = ["ConfigError", "SchedulerConfig", "check_plugin_names", "load_config"]
