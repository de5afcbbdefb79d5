"""The `kubesched` command."""
