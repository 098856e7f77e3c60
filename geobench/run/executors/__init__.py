"""Built-in executors: ``local`` (serial, in process) and ``pool`` (worker processes)."""


class WorkerDied(RuntimeError):
    """The process (or Ray worker) running a cell died before returning its result."""
