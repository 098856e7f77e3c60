import json

from geobench.contract.plugins import registry
from geobench.run import estimate
from geobench.suite import expand, load_suite
from tests.core.suite_text import small_suite


def test_gpu_hours_from_measured_throughput(tmp_path, monkeypatch):
    (tmp_path / "s.yaml").write_text(small_suite(steps=900, lrs=(0.1,)))
    cells = expand(load_suite(tmp_path / "s.yaml"), registry())
    assert [estimate.images(c) for c in cells] == [900 * 32 * 2] * 2
    monkeypatch.setattr(estimate, "THROUGHPUT", tmp_path)
    assert estimate.gpu_hours(cells).startswith("GPU-hours: not estimated")
    (tmp_path / "train_throughput_cuda.json").write_text(json.dumps(
        {"name": "GPU", "images_per_s": {"plain": 8.0, "engine": 16.0}}))
    hours = 2 * 900 * 32 * 2 / 16.0 / 3600
    assert estimate.gpu_hours(cells).startswith(f"GPU-hours: about {hours:.1f} at 16 img/s")
