"""nn.data.datasets: scikit-learn's digits, the IDX reader/writer, and FashionMNIST on IDX files we write."""

import gzip
import os

import numpy as np
import pytest

import autograd as ag
from nn.data import DataLoader, TensorDataset
from nn.data.datasets import FASHION_MNIST_ROOT, FashionMNIST, load_digits, read_idx, train_test_split, write_idx


def test_load_digits_arrays_and_split():
    X, y = load_digits(return_X_y=True)
    assert X.shape == (1797, 64) and X.dtype == np.float32 and y.dtype == np.int64
    assert X.min() == 0.0 and X.max() == 1.0 and sorted(set(y.tolist())) == list(range(10))
    Xtr, ytr = load_digits(train=True, return_X_y=True)
    Xte, yte = load_digits(train=False, return_X_y=True)
    assert len(ytr) + len(yte) == 1797 and abs(len(yte) - 0.2 * 1797) <= 10
    # disjoint and complete: every image row appears exactly once across the two sides
    rows = {r.tobytes() for r in X}
    assert {r.tobytes() for r in Xtr} | {r.tobytes() for r in Xte} == rows
    assert len(Xtr) + len(Xte) == len(X)
    # stratified: each class keeps about its share in the test side
    share = np.bincount(yte, minlength=10) / np.bincount(y, minlength=10)
    assert np.all(np.abs(share - 0.2) < 0.02)
    assert np.array_equal(load_digits(train=False, return_X_y=True)[1], yte)  # same seed, same split
    assert not np.array_equal(load_digits(train=False, seed=1, return_X_y=True)[1], yte)


def test_load_digits_tensor_dataset_and_loader():
    ds = load_digits(train=True, flatten=False)
    assert isinstance(ds, TensorDataset)
    x, y = ds[0]
    assert x.shape == (1, 8, 8) and x.dtype == ag.float32 and y.dtype == ag.int64
    xb, yb = next(iter(DataLoader(ds, batch_size=32)))
    assert xb.shape == (32, 1, 8, 8) and yb.shape == (32,)


def test_train_test_split_checks_and_orders():
    a, b = np.arange(10), np.arange(10) * 10
    a_tr, a_te, b_tr, b_te = train_test_split(a, b, test_fraction=0.3, seed=0)
    assert len(a_te) == 3 and np.array_equal(a_tr * 10, b_tr) and np.array_equal(a_te * 10, b_te)
    assert sorted(np.concatenate([a_tr, a_te]).tolist()) == list(range(10))
    with pytest.raises(ValueError, match="array 1 has 3 rows but array 0 has 10"):
        train_test_split(a, np.arange(3))
    with pytest.raises(ValueError, match=r"test_fraction must be in \(0, 1\)"):
        train_test_split(a, test_fraction=1.0)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16, np.int32, np.float32, np.float64])
@pytest.mark.parametrize("gz", [False, True])
def test_idx_round_trip(tmp_path, dtype, gz):
    a = (np.arange(24).reshape(2, 3, 4) - (0 if dtype == np.uint8 else 7)).astype(dtype)
    p = tmp_path / ("a.idx.gz" if gz else "a.idx")
    write_idx(p, a)
    raw = p.read_bytes()
    assert (raw[:2] == b"\x1f\x8b") == gz
    b = read_idx(p)
    assert b.dtype == np.dtype(dtype).newbyteorder("=") and b.shape == (2, 3, 4) and np.array_equal(a, b)


def test_idx_header_is_big_endian(tmp_path):
    p = tmp_path / "labels"
    write_idx(p, np.array([258, 1], dtype=np.int32))
    assert p.read_bytes() == bytes([0, 0, 0x0C, 1, 0, 0, 0, 2, 0, 0, 1, 2, 0, 0, 0, 1])
    # a hand-written MNIST-style labels file (magic 0x00000801)
    q = tmp_path / "lbl"
    q.write_bytes(b"\x00\x00\x08\x01" + (3).to_bytes(4, "big") + bytes([7, 2, 1]))
    assert read_idx(q).tolist() == [7, 2, 1]


@pytest.mark.parametrize("content, msg", [
    (b"\x01\x00\x08\x01\x00\x00\x00\x01\x05", "not an IDX file"),
    (b"\x00\x00\x07\x01\x00\x00\x00\x01\x05", "unknown IDX type code 0x07"),
    (b"\x00\x00\x08\x03\x00\x00\x00\x01", "truncated: 8 bytes, but its 3 dimension sizes end at byte 16"),
    (b"\x00\x00\x08\x01\x00\x00\x00\x04\x05", r"truncated: shape \(4,\) of uint8 needs 12 bytes, the file has 9"),
    (b"\x00\x00\x08\x01\x00\x00\x00\x01\x05\x06", "longer than its header says"),
])
def test_idx_rejects_bad_files(tmp_path, content, msg):
    p = tmp_path / "bad"
    p.write_bytes(content)
    with pytest.raises(ValueError, match=msg):
        read_idx(p)


def test_idx_rejects_damaged_gzip_and_bad_dtype(tmp_path):
    p = tmp_path / "bad.gz"
    p.write_bytes(gzip.compress(b"\x00\x00\x08\x01\x00\x00\x00\x01\x05")[:-6])
    with pytest.raises(ValueError, match="damaged gzip"):
        read_idx(p)
    with pytest.raises(TypeError, match="IDX holds uint8"):
        write_idx(tmp_path / "x", np.zeros(2, np.uint16))


def _fake_fashion(root, n_train=6, n_test=4, gz=True):
    rng = np.random.default_rng(0)
    ext = ".gz" if gz else ""
    for split, n in (("train", n_train), ("t10k", n_test)):
        write_idx(root / f"{split}-images-idx3-ubyte{ext}", rng.integers(0, 256, (n, 28, 28), dtype=np.uint8))
        write_idx(root / f"{split}-labels-idx1-ubyte{ext}", (np.arange(n) % 10).astype(np.uint8))


@pytest.mark.parametrize("gz", [True, False])
def test_fashion_mnist_reads_idx_files(tmp_path, gz):
    _fake_fashion(tmp_path, gz=gz)
    train, test = FashionMNIST(root=tmp_path), FashionMNIST(root=tmp_path, train=False)
    assert len(train) == 6 and len(test) == 4
    img, label = train[3]
    assert img.shape == (1, 28, 28) and img.dtype == ag.float32 and label == 3
    expected = read_idx(tmp_path / f"train-images-idx3-ubyte{'.gz' if gz else ''}")[3] / 255.0
    assert np.allclose(img.numpy()[0], expected)
    assert train.targets.dtype == np.int64 and train.data.dtype == np.uint8
    xb, yb = next(iter(DataLoader(train, batch_size=4)))
    assert xb.shape == (4, 1, 28, 28) and yb.numpy().tolist() == [0, 1, 2, 3]
    t = FashionMNIST(root=tmp_path, transform=lambda a: a.sum(), target_transform=lambda c: FashionMNIST.classes[c])
    assert t[1] == (int(train.data[1].sum()), "Trouser")


def test_fashion_mnist_missing_names_the_debian_package(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"train-images-idx3-ubyte\[\.gz\].*apt-get install "
                                                 r"dataset-fashion-mnist.*/usr/share/datasets/fashion-mnist"):
        FashionMNIST(root=tmp_path)
    assert FASHION_MNIST_ROOT == "/usr/share/datasets/fashion-mnist"


def test_fashion_mnist_rejects_mismatched_labels(tmp_path):
    _fake_fashion(tmp_path)
    write_idx(tmp_path / "train-labels-idx1-ubyte.gz", np.zeros(5, np.uint8))
    with pytest.raises(ValueError, match=r"holds \(5,\) labels for 6 images"):
        FashionMNIST(root=tmp_path)


@pytest.mark.skipif(not os.path.isdir(FASHION_MNIST_ROOT), reason="dataset-fashion-mnist not installed")
def test_fashion_mnist_from_the_debian_package():
    train, test = FashionMNIST(), FashionMNIST(train=False)
    assert train.data.shape == (60000, 28, 28) and test.data.shape == (10000, 28, 28)
    assert np.bincount(train.targets).tolist() == [6000] * 10 and np.bincount(test.targets).tolist() == [1000] * 10
