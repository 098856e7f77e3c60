"""The contract every layer above builds on: component types, params, hooks, the registry,
the plugin manager and the run-spec types. Imports only ``geobench.records``."""
