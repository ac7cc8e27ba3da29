"""``where`` on cpu above the size where the NumPy backend selects bits with a mask instead of calling np.where:
byte-identical to np.where (NaN payloads, -0.0, infinities) for every dtype of each size class, broadcast
conditions and operands, scalar sides (zero and non-zero, -0.0), and non-contiguous outputs' inputs."""

import numpy as np
import pytest

import tkernels as tk

RNG = np.random.default_rng(7)
DTYPES = [np.float32, np.float64, np.float16, np.int64, np.int32, np.int16, np.int8, np.uint8, np.bool_]
SHAPES = [((64, 65), (64, 65), (64, 65)), ((64, 65), (65,), (64, 1)), ((64, 1), (64, 65), ()), ((3000,), (1,), (3000,))]


def _values(shape, dt):
    v = RNG.standard_normal(shape) * 1e3
    if np.dtype(dt).kind == "f":
        v = v.astype(dt)
        flat = v.reshape(-1)
        if flat.size >= 4:
            flat[:4] = [np.nan, -0.0, np.inf, -np.inf]
        return v
    return (v > 0) if dt is np.bool_ else v.astype(np.int64).astype(dt)


def _arg(v):
    return tk.asarray(v) if isinstance(v, np.ndarray) else v


@pytest.mark.parametrize("dt", DTYPES, ids=[np.dtype(d).name for d in DTYPES])
@pytest.mark.parametrize("shapes", SHAPES, ids=["same", "broadcast", "column-cond", "long"])
def test_where_large_matches_numpy_bytes(dt, shapes):
    cs, s1, s2 = shapes
    cond = RNG.random(cs) > 0.5
    a, b = _values(s1, dt), _values(s2, dt)
    zero = False if dt is np.bool_ else 0
    for x1, x2 in ((a, b), (a, zero), (zero, b), (a, -0.0 if np.dtype(dt).kind == "f" else 5), (b, a)):
        got = tk.where(tk.asarray(cond), _arg(x1), _arg(x2)).numpy()
        want = np.broadcast_to(np.where(cond, x1, x2), got.shape).astype(got.dtype)
        assert got.shape == want.shape
        assert np.array(got, order="C").tobytes() == np.array(want, order="C").tobytes(), (x1 is zero, x2 is zero)


def test_where_large_noncontiguous_and_transposed():
    a = RNG.standard_normal((90, 80)).astype(np.float32)
    cond = RNG.random((80, 90)) > 0.3
    got = tk.where(tk.asarray(cond).T, tk.asarray(a)[:, ::-1], 0.0).numpy()
    assert got.tobytes() == np.where(cond.T, a[:, ::-1], np.float32(0)).tobytes()


def test_where_large_out_aliasing_an_operand():
    """``out=`` may be x1, x2 or a view overlapping them: the result is the one computed from the inputs as they
    were (the mask passes read x2 before out is written)."""
    c = RNG.random(4096) < 0.5
    a = RNG.standard_normal(4096).astype(np.float32)
    b = RNG.standard_normal(4096).astype(np.float32)
    want = np.where(c, a, b)
    for target in ("x1", "x2"):
        A, B = tk.asarray(a.copy()), tk.asarray(b.copy())
        out = A if target == "x1" else B
        tk.where(tk.asarray(c), A, B, out=out)
        assert out.numpy().tobytes() == want.tobytes(), target
    A = tk.asarray(a.copy())
    tk.where(tk.asarray(c), A, A, out=A)
    assert A.numpy().tobytes() == a.tobytes()
    buf = tk.asarray(np.concatenate([b, b[:1]]))
    want = np.where(c, a, b)
    tk.where(tk.asarray(c), tk.asarray(a), buf[:-1], out=buf[1:])
    assert buf.numpy()[1:].tobytes() == want.tobytes()


def test_where_broadcast_error_names_every_shape():
    with pytest.raises(ValueError, match=r"where: shapes \(2, 1\), \(3,\), \(5,\) cannot be broadcast"):
        tk.where(tk.asarray(np.ones((2, 1), bool)), tk.ones((3,)), tk.ones((5,)))
