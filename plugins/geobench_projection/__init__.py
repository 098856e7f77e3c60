"""geobench_projection plugin."""
