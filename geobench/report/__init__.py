"""Reporting: stored values read back, paired claims and their statistics, leaderboards, the
results API and the shared read helper of figure commands."""
