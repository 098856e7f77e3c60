"""Reporting: a study's leaderboard page and its record, the results API, a paper's claims
across profiles, and the stored rows figure commands read."""
