"""The built-in plugins, one package each, named as in kube-scheduler."""
