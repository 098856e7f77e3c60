"""The core's built-in components (heads, optimizers, metrics, loggers) and the core plugin
that registers them with the executors."""
