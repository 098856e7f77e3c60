"""The contract every layer above builds on: component types, params, hooks, the registry,
the plugin manager and the run-spec types. Imports only ``geobench.records``; the plugin
manager loads the core's own plugin (``geobench.components.builtins``) by module path, as it
loads every plugin, never by an import."""
