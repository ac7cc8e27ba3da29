"""Datasets that ship offline: scikit-learn's bundled 8x8 digits, and Fashion-MNIST from the IDX files of
Debian's ``dataset-fashion-mnist`` package (``/usr/share/datasets/fashion-mnist``). Nothing is downloaded.

>>> train = load_digits(train=True)            # TensorDataset: (float32 (64,), int64 label), 80% of 1797
>>> X, y = load_digits(return_X_y=True)        # NumPy arrays, all 1797 samples
>>> fm = FashionMNIST(train=False)             # (float32 tensor (1, 28, 28) in [0, 1], int label)
"""

from __future__ import annotations

import gzip
import os

import numpy as np

import autograd as ag

from .dataset import Dataset, TensorDataset

__all__ = ["load_digits", "train_test_split", "FashionMNIST", "read_idx", "write_idx", "FASHION_MNIST_ROOT"]


# ------------------------------------------------------------------------------------------------- split
def train_test_split(*arrays, test_fraction: float = 0.2, seed: int = 0, stratify=None) -> list:
    """Split arrays (NumPy arrays or tensors, one length) into train and test rows, like scikit-learn's:
    returns ``[a_train, a_test, b_train, b_test, ...]``. ``stratify`` (labels) keeps each class's share in both
    parts. The split depends only on ``seed``."""
    if not arrays:
        raise ValueError("train_test_split: needs at least one array")
    n = len(arrays[0])
    for i, a in enumerate(arrays):
        if len(a) != n:
            raise ValueError(f"train_test_split: array {i} has {len(a)} rows but array 0 has {n}")
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"train_test_split: test_fraction must be in (0, 1), got {test_fraction}")
    rng = np.random.default_rng(seed)
    if stratify is None:
        perm = rng.permutation(n)
        n_test = int(round(n * test_fraction))
        test_idx, train_idx = perm[:n_test], perm[n_test:]
    else:
        labels = np.asarray(stratify.detach().cpu().numpy() if isinstance(stratify, ag.Tensor) else stratify)
        if labels.shape != (n,):
            raise ValueError(f"train_test_split: stratify must hold one label per row ({n}), got shape "
                             f"{labels.shape}")
        test_parts, train_parts = [], []
        for c in np.unique(labels):
            rows = rng.permutation(np.flatnonzero(labels == c))
            k = int(round(len(rows) * test_fraction))
            test_parts.append(rows[:k])
            train_parts.append(rows[k:])
        test_idx = rng.permutation(np.concatenate(test_parts))
        train_idx = rng.permutation(np.concatenate(train_parts))
    out = []
    for a in arrays:
        out += [a[train_idx], a[test_idx]]
    return out


# ------------------------------------------------------------------------------------------------ digits
def load_digits(*, train: bool | None = None, test_fraction: float = 0.2, seed: int = 0, flatten: bool = True,
                return_X_y: bool = False):
    """scikit-learn's bundled handwritten digits (1797 images of 8x8, 10 classes), scaled to [0, 1].

    ``train=None``: every sample; ``True``/``False``: the train/test side of a stratified split
    (``test_fraction``, ``seed``). ``flatten``: X is (n, 64), else (n, 1, 8, 8). Returns a ``TensorDataset``
    of (float32 X, int64 y), or with ``return_X_y`` the NumPy arrays ``(X, y)``.
    """
    try:
        from sklearn.datasets import load_digits as _sk_digits
    except ImportError:
        raise ImportError("load_digits needs scikit-learn (pip install scikit-learn); it ships the digits data, "
                          "nothing is downloaded") from None
    d = _sk_digits()
    X = (d.data / 16.0).astype(np.float32)
    y = d.target.astype(np.int64)
    if not flatten:
        X = X.reshape(-1, 1, 8, 8)
    if train is not None:
        X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_fraction=test_fraction, seed=seed, stratify=y)
        X, y = (X_tr, y_tr) if train else (X_te, y_te)
    X, y = np.ascontiguousarray(X), np.ascontiguousarray(y)
    if return_X_y:
        return X, y
    return TensorDataset(ag.from_numpy(X), ag.from_numpy(y))


# ---------------------------------------------------------------------------------------------------- IDX
# IDX (LeCun's MNIST format): magic = 0x00 0x00 <type code> <ndim>, then ndim big-endian uint32 sizes, then the
# values, big-endian, row-major. Files are often gzipped.
_IDX_TYPES = {0x08: np.dtype(np.uint8), 0x09: np.dtype(np.int8), 0x0B: np.dtype(">i2"), 0x0C: np.dtype(">i4"),
              0x0D: np.dtype(">f4"), 0x0E: np.dtype(">f8")}
_IDX_CODES = {np.dtype(v).newbyteorder("=") if v.itemsize > 1 else v: k for k, v in _IDX_TYPES.items()}


def _read_bytes(path) -> bytes:
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":  # gzip, whatever the file is called
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as e:
            raise ValueError(f"read_idx: {path} is a damaged gzip file ({e})") from None
    return raw


def read_idx(path) -> np.ndarray:
    """The array in an IDX file (gzipped or not), in native byte order."""
    raw = _read_bytes(path)
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0:
        raise ValueError(f"read_idx: {path} is not an IDX file (magic bytes {raw[:4].hex() or 'missing'}; expected "
                         f"00 00 <type> <ndim>)")
    code, ndim = raw[2], raw[3]
    if code not in _IDX_TYPES:
        raise ValueError(f"read_idx: {path} has unknown IDX type code 0x{code:02x}; known: "
                         f"{', '.join(f'0x{c:02x}' for c in _IDX_TYPES)}")
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise ValueError(f"read_idx: {path} is truncated: {len(raw)} bytes, but its {ndim} dimension sizes end at "
                         f"byte {header}")
    shape = tuple(int(s) for s in np.frombuffer(raw, dtype=">u4", count=ndim, offset=4))
    dtype = _IDX_TYPES[code]
    need = header + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(raw) != need:
        what = "truncated" if len(raw) < need else "longer than its header says"
        raise ValueError(f"read_idx: {path} is {what}: shape {shape} of {dtype.name} needs {need} bytes, the file "
                         f"has {len(raw)}")
    arr = np.frombuffer(raw, dtype=dtype, offset=header).reshape(shape)
    return arr.astype(dtype.newbyteorder("="), copy=True)


def write_idx(path, array, *, compress: bool | None = None) -> None:
    """Write ``array`` as an IDX file; gzipped when ``compress`` (default: when ``path`` ends in ``.gz``)."""
    a = np.asarray(array)
    key = a.dtype.newbyteorder("=") if a.dtype.itemsize > 1 else a.dtype
    if key not in _IDX_CODES:
        raise TypeError(f"write_idx: IDX holds uint8, int8, int16, int32, float32 or float64, got {a.dtype}")
    if a.ndim > 255:
        raise ValueError(f"write_idx: at most 255 dimensions, got {a.ndim}")
    code = _IDX_CODES[key]
    body = bytes([0, 0, code, a.ndim]) + np.asarray(a.shape, dtype=">u4").tobytes()
    body += np.ascontiguousarray(a, dtype=_IDX_TYPES[code]).tobytes()
    if compress if compress is not None else str(path).endswith(".gz"):
        body = gzip.compress(body)
    with open(path, "wb") as f:
        f.write(body)


# ----------------------------------------------------------------------------------------- Fashion-MNIST
FASHION_MNIST_ROOT = "/usr/share/datasets/fashion-mnist"  # where Debian's dataset-fashion-mnist installs
_FASHION_FILES = {True: ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
                  False: ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}


def _find(root: str, stem: str) -> str | None:
    for name in (stem + ".gz", stem):
        p = os.path.join(root, name)
        if os.path.isfile(p):
            return p
    return None


class FashionMNIST(Dataset):
    """Zalando's Fashion-MNIST (60000 train / 10000 test images of 28x28, 10 classes) from IDX files.

    ``root`` defaults to ``/usr/share/datasets/fashion-mnist`` (``apt-get install dataset-fashion-mnist``).
    A sample is ``(image, label)``: image a float32 tensor of shape (1, 28, 28) in [0, 1] (or
    ``transform(uint8 array of shape (28, 28))``), label an int (or ``target_transform(label)``). ``data``
    (uint8, (n, 28, 28)) and ``targets`` (int64, (n,)) hold everything as NumPy arrays.
    """

    classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
               "Ankle boot"]

    def __init__(self, root: str | None = None, train: bool = True, transform=None, target_transform=None):
        self.root = FASHION_MNIST_ROOT if root is None else os.fspath(root)
        self.train = bool(train)
        self.transform, self.target_transform = transform, target_transform
        img_stem, lbl_stem = _FASHION_FILES[self.train]
        img_path, lbl_path = _find(self.root, img_stem), _find(self.root, lbl_stem)
        if img_path is None or lbl_path is None:
            missing = [s for s, p in ((img_stem, img_path), (lbl_stem, lbl_path)) if p is None]
            raise FileNotFoundError(
                f"FashionMNIST: {', '.join(m + '[.gz]' for m in missing)} not found in {self.root}. Install "
                f"Debian's package with `apt-get install dataset-fashion-mnist` (it puts the IDX files in "
                f"{FASHION_MNIST_ROOT}), or pass root= a folder that holds them")
        self.data = read_idx(img_path)
        self.targets = read_idx(lbl_path).astype(np.int64)
        if self.data.ndim != 3 or self.data.dtype != np.uint8:
            raise ValueError(f"FashionMNIST: {img_path} should hold uint8 images (n, rows, cols), got "
                             f"{self.data.dtype} {self.data.shape}")
        if self.targets.shape != (self.data.shape[0],):
            raise ValueError(f"FashionMNIST: {lbl_path} holds {self.targets.shape} labels for "
                             f"{self.data.shape[0]} images in {img_path}")

    def __len__(self) -> int:
        return self.data.shape[0]

    def __getitem__(self, index):
        img, target = self.data[index], int(self.targets[index])
        if self.transform is not None:
            img = self.transform(img)
        else:
            img = ag.from_numpy((img.astype(np.float32) / 255.0)[None])
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def __repr__(self) -> str:
        return f"FashionMNIST(root={self.root!r}, train={self.train}, n={len(self)})"
