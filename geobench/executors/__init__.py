"""Built-in executors: ``local`` (serial, in process) and ``pool`` (worker processes)."""
