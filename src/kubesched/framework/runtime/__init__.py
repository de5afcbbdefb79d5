"""The framework's runtime (upstream's pkg/scheduler/framework/runtime): the
profile's plugins built from the registry and run at each extension point
(`framework`: Framework, as frameworkImpl), the errors a plugin's failure raises
(`errors`), how those runs are timed (`timing`), and OpportunisticBatching's
state between cycles (`batch`). Plugins never import it: they see the
framework's interfaces and the Handle."""
