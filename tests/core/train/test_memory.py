"""A cell's peak resident memory: what the process held while it ran the cell, not what it
held before (Linux: the high-water mark is reset before each cell)."""

import sys

import numpy as np
import pytest
import torch

from geobench.contract.interfaces import Objective
from geobench.contract.manager import load_registry
from geobench.contract.registry import EmptyParams, Entry
from geobench.study import Study
from geobench.suite import load_suite
from geobench.train.engine import run_cell
from tests.core.suite_text import small_suite

MB = 2**20


class Hungry(Objective):
    """Cross-entropy that touches a 300 MiB buffer once (at step 1)."""

    n_views = 1

    def forward(self, arm, batch, views):
        if batch.step == 1:
            np.ones(300 * MB // 8).sum()  # resident while summed, freed at once
        return torch.nn.functional.cross_entropy(arm.embed(views[0]), batch.y)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the peak resets on Linux")
def test_a_cells_peak_is_what_it_held_while_it_ran(tmp_path):
    reg = load_registry()
    reg.add(Entry("objectives", "hungry", lambda p, ctx: Hungry(), EmptyParams, "hungry"))
    text = small_suite(steps=3, lrs=(0.1,)).replace("seeds: 2", "seeds: 1")
    (tmp_path / "plain.yaml").write_text(text)
    (tmp_path / "hungry.yaml").write_text(text.replace("{name: toy_ce}", "{name: hungry}"))
    plain, hungry = (Study(load_suite(tmp_path / f"{n}.yaml"), reg).cells[0]
                     for n in ("plain", "hungry"))
    first = run_cell(plain, reg).peak_mb
    big = np.ones(600 * MB // 8)  # held before the cell, freed before it starts
    big.sum()
    del big
    again = run_cell(plain, reg).peak_mb
    assert abs(again - first) < 100  # not the 600 MiB held before the cell
    fed = run_cell(hungry, reg)
    assert fed.status == "complete", fed.traceback
    assert fed.peak_mb - again > 250  # the 300 MiB it touched
