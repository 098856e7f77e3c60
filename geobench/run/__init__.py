"""Running a suite: the runner, executors, the SQLite store and its leases, provenance and
cost estimates."""
