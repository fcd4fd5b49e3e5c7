"""The built-in task types, one module each (see kbert.tasks.registry.BUILTIN_PLUGINS)."""
