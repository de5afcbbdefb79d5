"""DynamicResources: Dynamic Resource Allocation with structured parameters."""
