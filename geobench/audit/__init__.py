"""Checking published pages from their files alone: ``recompute`` (every verdict from a
page's units, with numpy and scipy, importing nothing of geobench) and ``page`` (what
``geobench verify`` checks of a page: hashes, units, verdicts, registration)."""
