"""Every public op of autograd.ops is either covered by a gradient row (tests/autograd/gradinfos) or listed
here as non-differentiable, an alias of a covered op, or an internal helper. A new op must be classified."""

import importlib
import pkgutil

import autograd.ops as ag_ops

from . import gradinfos

ROWS = set()
for _m in pkgutil.iter_modules(gradinfos.__path__):
    ROWS |= {r.name for r in importlib.import_module(f"{gradinfos.__name__}.{_m.name}").GRAD_INFOS}

# op -> the row that exercises it (rows that test several ops at once)
COVERED_BY = {
    "bmm": "mm_bmm_mv_dot", "mm": "mm_bmm_mv_dot", "mv": "mm_bmm_mv_dot", "dot": "mm_bmm_mv_dot",
    "scaled_dot_product_attention": "sdpa", "fliplr": "fliplr_flipud", "flipud": "fliplr_flipud",
    "t": "t_T_mT", "T": "t_T_mT", "mT": "t_T_mT", "select": "select_narrow", "narrow": "select_narrow",
    "squeeze": "squeeze_unsqueeze", "unsqueeze": "squeeze_unsqueeze", "flatten": "flatten_unflatten",
    "unflatten": "flatten_unflatten", "chunk": "chunk_tensor_split", "tensor_split": "chunk_tensor_split",
    "getitem": "getitem_basic", "setitem": "setitem_basic", "batch_norm": "batch_norm_train", "max": "max_dim",
    "min": "min_dim", "atleast_1d": "atleast_1d_2d", "atleast_2d": "atleast_1d_2d", "reshape_as": "reshape_as_view_as",
    "view_as": "reshape_as_view_as", "meshgrid": "meshgrid_ij", "einsum": "einsum_mm", "scatter_reduce":
    "scatter_reduce_sum", "interpolate": "interpolate_bilinear", "hsplit": "hsplit_vsplit_dsplit",
    "vsplit": "hsplit_vsplit_dsplit", "dsplit": "hsplit_vsplit_dsplit",
}
# alias -> the canonical op (same function or a thin rename)
ALIASES = {
    "absolute": "abs", "arccos": "acos", "arccosh": "acosh", "arcsin": "asin", "arcsinh": "asinh",
    "arctan": "atan", "arctan2": "atan2", "arctanh": "atanh", "clip": "clamp", "divide": "div", "true_divide": "div",
    "multiply": "mul", "negative": "neg", "subtract": "sub", "fix": "trunc", "sgn": "sign", "swapaxes": "transpose",
    "swapdims": "transpose", "moveaxis": "movedim", "concat": "cat", "concatenate": "cat", "adjoint": "mT",
}
NON_DIFFERENTIABLE = {
    "eq", "ne", "lt", "le", "gt", "ge", "less", "less_equal", "greater", "greater_equal", "not_equal",
    "logical_and", "logical_or", "logical_xor", "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor",
    "bitwise_not", "bitwise_invert", "bitwise_left_shift", "bitwise_right_shift", "isfinite", "isinf", "isnan",
    "isposinf", "isneginf", "isreal", "signbit", "floor_divide", "nextafter", "argmax", "argmin", "argsort", "any",
    "all", "count_nonzero", "nonzero", "argwhere", "one_hot", "searchsorted", "bucketize", "isin", "unique",
    "unique_consecutive", "broadcast_shapes", "detach_copy", "is_complex", "isclose", "allclose", "equal",
    "bincount", "heaviside",
    # identities (tkernels has no lazy conjugate or negative bits)
    "resolve_conj", "resolve_neg",
}
HELPERS = {"norm_dims", "unreduce", "index_backward", "composite_grad", "return_types"}


def _ops():
    names = set()
    for m in pkgutil.iter_modules(ag_ops.__path__):
        if m.name.startswith("_"):
            continue
        names |= set(getattr(importlib.import_module(f"{ag_ops.__name__}.{m.name}"), "__all__", ()))
    return names


def _covered(name):
    return name in ROWS or any(r.startswith(name + "_") for r in ROWS) or COVERED_BY.get(name) in ROWS


def test_every_op_is_classified():
    missing = sorted(n for n in _ops() if not (_covered(n) or (n in ALIASES and _covered(ALIASES[n]))
                                                or n in NON_DIFFERENTIABLE or n in HELPERS))
    assert not missing, f"ops without a gradient row or a classification: {missing}"


def test_classification_is_current():
    ops = _ops()
    stale = sorted((set(COVERED_BY) | set(ALIASES) | NON_DIFFERENTIABLE | HELPERS) - ops)
    assert not stale, f"classified names that are not ops any more: {stale}"
    assert all(COVERED_BY[n] in ROWS for n in COVERED_BY), [n for n in COVERED_BY if COVERED_BY[n] not in ROWS]


def test_counts():
    ops = _ops()
    differentiable = ops - NON_DIFFERENTIABLE - HELPERS
    assert len(differentiable) >= 180 and len(ROWS) >= 280
