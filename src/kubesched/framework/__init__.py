"""The Scheduling Framework: extension-point interfaces, Status, CycleState and the runner."""
