"""Running a study's cells: the runner and what it shows, executors, the SQLite store and
its leases, provenance and cost estimates."""
