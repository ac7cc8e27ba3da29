"""The reduction and scan kernels past what the op table reaches (tests/tkernels/opinfos/reduction.py runs every op
on small samples): rows longer than a tile, rows split across programs (two launches through partial states),
column reductions, strided/broadcast/negative-stride/many-dimensional views, NaN/inf and ties on split and tile
boundaries and the GPU tiling plan.

Results on cuda are compared with the cpu backend (itself checked against NumPy by the op table). The split
path is forced at small sizes by shrinking the tile and lowering the split thresholds of the backend module.
"""

from __future__ import annotations

import numpy as np
import pytest

import tkernels as tk
import tkernels.cuda as tkc
from tkernels.dispatch import lookup

pytestmark = pytest.mark.skipif(not tkc.is_available(), reason="needs cuda (real or interpreted)")

if tkc.is_available():
    from tkernels.backends.triton import reduction as backend
else:  # pragma: no cover - the module is skipped
    backend = None

INF, NAN = float("inf"), float("nan")
TOL = {"float32": (2e-5, 1e-5), "float64": (1e-12, 1e-12), "float16": (2e-3, 1e-3), "bfloat16": (1.6e-2, 1e-2)}


def check(op, x: np.ndarray, *args, dtype="float32", **kwargs):
    """``op`` (a tkernels name or a callable) on cuda equals ``op`` on cpu: values, dtype, shape. ``x`` is NumPy
    data, cast to ``dtype`` on each device, or a (data, view maker) pair making the view under test from it."""
    fn = getattr(tk, op) if isinstance(op, str) else op
    got = fn(_dev(x, "cuda", dtype), *args, **kwargs)
    want = fn(_dev(x, "cpu", dtype), *args, **kwargs)
    assert got.device.type == "cuda" and got.dtype == want.dtype and got.shape == want.shape, (got, want)
    g, w = got.numpy(), want.numpy()
    if g.dtype.kind in "biu":
        np.testing.assert_array_equal(g, w, err_msg=f"{op} {kwargs}")
    else:
        rtol, atol = TOL.get(str(got.dtype), TOL["float32"])
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True,
                                   err_msg=f"{op} {kwargs}")
    return got


def _dev(x, device, dtype):
    if isinstance(x, tuple):  # (NumPy data, view maker)
        data, view = x
        return view(tk.asarray(data, device=device).astype(dtype))
    return tk.asarray(x, device=device).astype(dtype)


@pytest.fixture
def split(monkeypatch):
    """Tiles of 64 elements and rows split whenever they span 2 tiles: the two-launch path at small sizes."""
    monkeypatch.setattr(backend, "TILE", 64)
    monkeypatch.setattr(backend, "TARGET_PROGRAMS", 64)
    monkeypatch.setattr(backend, "SPLIT_MIN_CHUNKS", 2)
    launches = []
    orig = backend.launch

    def counting(kernel, grid, *args, **meta):
        launches.append((kernel, grid, meta))
        return orig(kernel, grid, *args, **meta)

    monkeypatch.setattr(backend, "launch", counting)
    return launches


REDUCTIONS = ["sum", "prod", "mean", "max", "min", "argmax", "argmin", "var", "std", "logsumexp", "any", "all",
              "count_nonzero"]


def _data(rng, shape, op):
    if op == "prod":  # products of thousands of values stay finite
        return rng.uniform(0.999, 1.001, shape) * rng.choice([-1.0, 1.0], shape)
    if op in ("any", "all", "count_nonzero"):
        x = rng.uniform(0.5, 1.5, shape)
        return np.where(rng.random(shape) < 0.3, 0.0, x)
    return rng.uniform(0.5, 1.5, shape)  # positive: long float32 sums without cancellation


# ---------------------------------------------------------------------------------------------- long rows
@pytest.mark.parametrize("op", REDUCTIONS)
def test_rows_longer_than_a_tile(op):
    # the interpreter's tile is 8192 elements: 20000 is three chunks, the last one partial
    rng = np.random.default_rng(1)
    check(op, _data(rng, (20000,), op))
    check(op, _data(rng, (2, 9001), op), axis=-1)
    if op not in ("argmax", "argmin"):
        check(op, _data(rng, (3, 4100, 2), op), axis=(0, 1))


@pytest.mark.parametrize("ord", [2, 1, INF, -INF, 0, 3, 0.5, -1.5])
def test_vector_norm_long_rows(ord):  # noqa: A002
    rng = np.random.default_rng(2)
    x = _data(rng, (2, 9001), "any")
    if ord == -INF or ord < 0:
        x = np.abs(x) + 0.5
    check("vector_norm", x, axis=1, ord=ord)
    check("vector_norm", x, ord=ord)


@pytest.mark.parametrize("op", ["cumulative_sum", "cumulative_prod"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_scans_carry_across_chunks(op, dtype):
    rng = np.random.default_rng(3)
    x = _data(rng, (2, 17000), "prod" if op == "cumulative_prod" else "sum")
    if dtype == "int32":
        x = rng.integers(-3, 4, x.shape)
    check(op, x, dtype=dtype, axis=1)
    check(op, x, dtype=dtype, axis=1, include_initial=True)
    check(op, x[:, :300], dtype=dtype, axis=0, include_initial=True)  # columns: a scan across rows


# ------------------------------------------------------------------------------------- split rows (2 launches)
@pytest.mark.parametrize("op", REDUCTIONS)
def test_split_rows(split, op):
    rng = np.random.default_rng(4)
    check(op, _data(rng, (1000,), op))  # one row of 16 tiles
    check(op, _data(rng, (3, 700), op), axis=1)
    if op not in ("argmax", "argmin"):
        check(op, _data(rng, (300, 5, 3), op), axis=(0, 1))  # columns: the kept axis is the contiguous one
    assert any(meta["STAGE"] == 1 for _, _, meta in split) and any(meta["STAGE"] == 2 for _, _, meta in split)


@pytest.mark.parametrize("ord", [2, 1, INF, -INF, 0, 3, -1.5])
def test_split_vector_norm(split, ord):  # noqa: A002
    rng = np.random.default_rng(5)
    x = np.abs(_data(rng, (2, 700), "any")) + (0.5 if ord < 0 else 0.0)
    check("vector_norm", x, axis=1, ord=ord)
    assert any(meta["STAGE"] == 2 for _, _, meta in split)


@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_ties_and_nan_across_splits(split, op):
    x = np.zeros(1000)
    ext = 5.0 if op == "argmax" else -5.0
    x[[70, 500, 999]] = ext  # ties in different splits: the first index wins
    assert check(op, x).item() == 70
    x[[640, 300, 900]] = NAN  # NaN is the extreme: the first NaN wins
    assert check(op, x).item() == 300
    same = np.full((2, 700), -INF if op == "argmax" else INF)  # every value equals the lanes' sentinel
    np.testing.assert_array_equal(check(op, same, axis=1).numpy(), [0, 0])
    ints = np.zeros((3, 700), np.int64)
    ints[1, 650] = ints[1, 130] = 9 if op == "argmax" else -9
    np.testing.assert_array_equal(check(op, ints, dtype="int64", axis=1).numpy(), [0, 130, 0])
    np.testing.assert_array_equal(check(op, ints, dtype="int8", axis=1).numpy(), [0, 130, 0])


@pytest.mark.parametrize("op", ["max", "min", "logsumexp", "sum", "vector_norm"])
def test_nan_and_inf_across_splits(split, op):
    x = np.random.default_rng(6).uniform(-1, 1, (5, 700))
    x[0, 650] = NAN
    x[1, 3] = INF
    x[2, :] = -INF
    x[3, 100], x[3, 600] = INF, -INF
    x[4, 690] = NAN
    x[4, 10] = INF
    check(op, x, axis=1)
    check(op, x[2:3])  # all -inf: logsumexp -inf, max -inf


@pytest.mark.parametrize("op", ["var", "std"])
def test_split_var_large_mean(split, op):
    x = np.random.default_rng(7).uniform(0, 1, (2, 700)) + 1000.0  # two-pass: no catastrophic cancellation
    got = check(op, x, axis=1, correction=1)
    var = got.numpy() if op == "var" else got.numpy() ** 2
    np.testing.assert_allclose(var, 1 / 12, rtol=0.2)  # of uniform(0, 1), as float32 at 1000 can tell
    check(op, x, dtype="float64", correction=0.5)


def test_split_partial_states_keep_their_dtypes(split):
    x = np.random.default_rng(8).integers(0, 2, 5000).astype(bool)
    check("count_nonzero", x, dtype="bool")  # int64 partial counts, not the input's bool
    check("any", np.zeros(5000), dtype="float16")
    check("all", np.ones(5000), dtype="bfloat16")
    check("sum", np.full(5000, 100), dtype="int8")  # wraps like the cpu backend (int64 partials, then int8)
    check("sum", np.full(5000, 0.5), dtype="float16")
    check(lambda a: tk.sum(a, dtype=tk.float64), np.full(5000, 0.1))


# --------------------------------------------------------------------------------------------------- layouts
def _permuted_4d(a):  # non-mergeable kept and reduced groups of 2+ dims, a negative stride, a step
    return tk.permute_dims(a, (2, 0, 3, 1))[::2, :, ::-1, 1:]


LAYOUTS = {
    "negative strides": ((3, 4, 5), lambda a: a[::-1, :, ::-2]),
    "broadcast": ((1, 6), lambda a: tk.broadcast_to(a, (7, 4, 6))),
    "permuted 4-d": ((3, 5, 7, 4), _permuted_4d),
    "transposed": ((9, 11), lambda a: a.mT),
}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("op", REDUCTIONS + ["vector_norm"])
def test_views(op, layout):
    shape, view = LAYOUTS[layout]
    data = _data(np.random.default_rng(9), shape, op)
    n = view(tk.asarray(data)).ndim
    axes = [None, 0, n - 1, (0, n - 1)] if n > 2 else [None, 0, 1]
    if n > 3:
        axes.append((1, 3))
    for axis in axes:
        if op in ("argmax", "argmin") and isinstance(axis, tuple):
            continue
        check(op, (data, view), axis=axis)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_scan_views(layout):
    shape, view = LAYOUTS[layout]
    data = _data(np.random.default_rng(10), shape, "prod")
    n = view(tk.asarray(data)).ndim
    for axis in range(n):
        check("cumulative_sum", (data, view), axis=axis, include_initial=axis == 0)
        check("cumulative_prod", (data, view), axis=axis)


def test_keepdims_and_non_contiguous_out():
    # a backend asked to write into a strided out goes through a temporary (the entries always pass contiguous)
    x = tk.asarray(np.arange(24.0).reshape(4, 6), device="cuda")
    out = tk.zeros((4, 2), device="cuda")[:, 0]
    lookup("sum", x.device)(out, x, (1,), tk.float32)
    np.testing.assert_array_equal(out.numpy(), np.arange(24.0).reshape(4, 6).sum(1))
    assert tk.sum(x, axis=1, keepdims=True).shape == (4, 1)


# ---------------------------------------------------------------------------------------------- matrix norms
@pytest.mark.parametrize("ord", ["fro", 1, -1, INF, -INF])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_matrix_norm(ord, dtype):  # noqa: A002
    rng = np.random.default_rng(11)
    for shape in [(3, 3), (2, 5, 7), (129, 3), (2, 1, 3, 4)]:
        check("matrix_norm", rng.uniform(-3, 3, shape), dtype=dtype, ord=ord, keepdims=shape == (3, 3))
    if ord in ("fro", 1, -1):
        check("matrix_norm", np.zeros((2, 0, 3)), ord=ord)
    x = rng.uniform(-3, 3, (4, 5))
    check("matrix_norm", (x, lambda a: a.mT[::-1]), ord=ord)


def test_matrix_norm_long(split):
    x = np.random.default_rng(12).uniform(-1, 1, (2, 300, 3))  # long columns (ord ±1), many rows (ord ±inf)
    for ord in ("fro", 1, -1, INF, -INF):  # noqa: A001
        check("matrix_norm", x, ord=ord)


# ----------------------------------------------------------------------------------------------- dtype paths
def test_accumulation_dtypes():
    check(lambda a: tk.sum(a, dtype=tk.int32), np.array([1.5, 2.7, -1.9]))  # cast first: truncation
    check(lambda a: tk.sum(a, dtype=tk.bool), np.array([0.0, 0.5, 0.0]))  # a bool sum is "any"
    check(lambda a: tk.prod(a, dtype=tk.bool), np.array([1.0, 0.5, 0.0]))  # a bool product is "all"
    check(lambda a: tk.cumulative_sum(a, dtype=tk.bool), np.array([0.0, 0.5, 0.0]))
    check(lambda a: tk.cumulative_prod(a, dtype=tk.int8), np.full(20, 3), dtype="int16")  # wraps in int8
    check(lambda a: tk.sum(a, axis=1, dtype=tk.uint8), np.full((2, 300), 7), dtype="int32")
    check("logsumexp", np.array([[1, 0, 1], [0, 0, 0]]), dtype="bool", axis=1)
    check("logsumexp", np.array([[3, 2, 1000]]), dtype="int64", axis=1)
    check("max", np.array([[True, False], [False, False]]), dtype="bool", axis=1)
    check("argmin", np.array([200, 3, 255, 3]), dtype="uint8")


def test_empty_and_0d():
    check("sum", np.zeros((2, 0, 3)), axis=1)
    check("prod", np.zeros((2, 0, 3)), axis=(0, 1))
    check("mean", np.zeros((0, 4)), axis=0)
    check("var", np.zeros((0, 4)), axis=0, correction=1)
    check("logsumexp", np.zeros((3, 0)), axis=1)
    check("any", np.zeros((3, 0)), axis=1)
    check("all", np.zeros((3, 0)), axis=1)
    check("vector_norm", np.zeros((3, 0)), axis=1, ord=3)
    check("sum", np.zeros((0, 3)), axis=1)  # an empty output
    check("cumulative_sum", np.zeros((2, 0)), axis=1, include_initial=True)
    for op in REDUCTIONS:
        check(op, np.array(2.5))
    check("cumulative_prod", np.array(2.5))


# ------------------------------------------------------------------------------------- the GPU plan, on the host
@pytest.fixture
def gpu_plan(monkeypatch):
    monkeypatch.setattr(backend, "INTERPRETED", False)
    monkeypatch.setattr(backend, "TILE", 2048)
    monkeypatch.setattr(backend, "TARGET_PROGRAMS", 528)
    monkeypatch.setattr(backend, "SPLIT_MIN_CHUNKS", 8)


GPU_TILES = {*backend.GPU_ROW_TILES, backend.GPU_COLUMN_TILE} if backend else set()


@pytest.mark.parametrize("M,R", [(1, 1), (1, 7), (4096, 4096), (3, 10**6), (1, 2**33 + 5), (10**6, 3),
                                 (100, 100_000), (1, 20_000), (528, 10**6), (1, 2**20)])
def test_gpu_tiles_and_splits(gpu_plan, M, R):
    for column in (False, True):
        bm, br = backend._tiles(M, R, column)
        assert (bm, br) in GPU_TILES and bm * br <= 2048  # a fixed set: each is a compiled variant (AOT table)
        s, per = backend._splits(M, R, bm, br)
        assert 1 <= s <= backend.MAX_SPLITS and (s == 1 or per % br == 0)
        assert (s - 1) * per < R <= s * per  # every element in exactly one split, no empty split
        if -(-R // br) >= 8 and -(-M // bm) < 528:  # long rows, too few of them to fill the GPU: split
            assert s > 1, (M, R, bm, br)
        s2, _ = backend._splits(M, s, *backend._tiles(M, s, False))
        assert s2 == 1  # the partials are reduced in one launch


def test_gpu_plan_matches_the_interpreted_launches(split):
    # the same entry points launch STAGE 0 for short rows and STAGE 1 + 2 for long ones
    x = tk.asarray(np.ones((2, 50)), device="cuda")
    tk.sum(x, axis=1)
    assert [m["STAGE"] for _, _, m in split] == [0]
    split.clear()
    tk.sum(tk.asarray(np.ones((2, 500)), device="cuda"), axis=1)
    stages = [m["STAGE"] for _, _, m in split]
    assert stages == [1, 2] and split[0][1][1] > 1  # a grid of (row blocks, splits)
    split.clear()
    tk.var(tk.asarray(np.ones((2, 500)), device="cuda"), axis=1)
    assert [(m["OP"], m["STAGE"]) for _, _, m in split] == [(7, 1), (7, 2), (8, 1), (8, 2)]  # means, then var


# ------------------------------------------------------------------------------------------------ a real GPU
@pytest.mark.gpu
def test_gpu_large_reductions():
    rng = np.random.default_rng(13)
    x = rng.uniform(0.5, 1.5, (3, 3_000_001)).astype(np.float32)
    for op in ("sum", "max", "argmin", "var", "logsumexp", "count_nonzero"):
        check(op, x, axis=1)
        check(op, x[:, :2_000_000].T.copy(), axis=0)  # columns
    check("cumulative_sum", x[:, :1_000_000], dtype="float64", axis=1)  # float32 running sums drift apart
    check("vector_norm", x, ord=3)
    check("argmax", x)  # a flat index past 2**23
