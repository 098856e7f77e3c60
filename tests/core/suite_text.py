"""A small real suite (the toy plugin's Gaussian mixture, MLP and cross-entropy; the core's
SGD) that core tests run."""

SMALL = """\
name: small
description: a small real grid for the harness tests
base:
  data: {name: toy_mixture, num_classes: 3, dim: 8, n_train: 96, n_test: 48, batch_size: 32,
         reference_size: 32}
  augment: {name: toy_noise, sigma: 0.1}
  backbone: {name: toy_mlp, depth: 2, width: 16}
  head: {name: identity}
  objective: {name: toy_ce}
  optimizer: {name: sgd, lr: 0.1}
  train: {steps: STEPS, device: cpu}
  metrics:
    - {name: nccc, every: 10}
grid:
  optimizer.lr: LRS
seeds: 2
leaderboard:
  rows: [optimizer.lr]
  metrics:
    - {key: nccc.accuracy, label: NCCC accuracy}
    - {key: loss.train, label: final loss}
  plots: [loss.train]
"""


def small_suite(steps: int = 20, lrs: tuple[float, ...] = (0.05, 0.1)) -> str:
    return SMALL.replace("STEPS", str(steps)).replace("LRS", str(list(lrs)))


CLAIMS_BASE = """\
base:
  data: {name: toy_mixture, num_classes: 3, dim: 8, n_train: 96, n_test: 48, batch_size: 32}
  augment: {name: toy_none}
  backbone: {name: toy_mlp, depth: 2, width: 16}
  objective: {name: toy_ce}
  optimizer: {name: sgd, lr: 0.1}
  train: {steps: 30, device: cpu}
"""
"""The base of the claims tests' suites (their metrics and grids follow it)."""
