"""Built-in experiment trackers."""
