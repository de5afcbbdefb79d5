"""Example custom plugins: a Filter and a Score plugin written against kubesched's API."""
