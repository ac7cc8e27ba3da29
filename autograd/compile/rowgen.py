"""The code of row ops and single-program segments in a generated kernel (``codegen``; the ops: ``rows.py``,
``splits.py``). A row segment's program holds ``BLOCK_M`` whole rows of ``BLOCK_N`` lanes (a power of two >= the
row length), flattened: ``lane``, with ``rows``, ``cols`` and ``mask`` per lane; a row op reshapes its values to
the ``[BLOCK_M, BLOCK_N]`` tile for its row sums, with the combine functions and in the order of the eager kernels
(``kernels/norm.py``, ``kernels/softmax.py``, ``kernels/loss.py``), so its element-wise results are the eager
ones."""

from __future__ import annotations

from tkernels.kernels import elementwise as ek

from .schedule import layout

__all__ = ["row_code", "count_code", "mean_code"]


def _tl_compute(ct):
    return "tl.float64" if ct == ek.CT_F64 else "tl.float32"


def _ct(dtype) -> int:
    from tkernels import dtypes as _dt

    return ek.CT_F64 if dtype is _dt.float64 else ek.CT_F32


def row_code(g, op, read, fresh, ct, tile, mn, start) -> str:
    """The code of a row op (``rows.py``) inside a row segment (``lane``: the program's ``BLOCK_M x BLOCK_N`` tile
    flattened; ``rows``, ``cols``, ``mask`` per lane); returns the expression of its element-wise result. Row sums
    reduce the tile's rows with the combine function and in the order of the eager kernels (``kernels/norm.py``)."""
    from tkernels.backends.triton._launch import f64_bits

    bm, bn = tile
    m_, n_ = mn
    tlc = _tl_compute(ct)
    t2 = f"[{bm}, {bn}]"
    t1 = f"[{bm * bn}]"

    loaded = {}

    def vec(a, by):  # a per-row or per-column vector, on the tile
        key = (layout(a), by)
        if key not in loaded:
            loaded[key] = v = fresh()
            g.emit(f"{v} = tl.reshape(tl.load({g.ptr(a)} + {by}, mask={'rmask' if by == 'rows' else 'cmask'}, "
                   f"other=0).to({tlc}), {t2})")
        return loaded[key]

    def two(v):
        return f"tl.reshape({v}, {t2})"

    if op.name == "layer_norm_rows":
        out, mean, rstd, x, w, b, M, N, eps = op.call.args
        xv = read(x, ct)
        x2, xc, var, rs, y = fresh(), fresh(), fresh(), fresh(), fresh()
        e = g.arg("c", f64_bits(eps), scalar=True)
        g.emit(f"{x2} = tl.where({two('mask')}, {two(xv)}, 0.0)")
        mu = fresh()
        g.emit(f"{mu} = tl.reduce({x2}, 1, _SUM, keep_dims=True) / {n_}")
        g.emit(f"{xc} = tl.where({two('mask')}, {x2} - {mu}, 0.0)")
        g.emit(f"{var} = tl.reduce({xc} * {xc}, 1, _SUM, keep_dims=True) / {n_}")
        g.emit(f"{rs} = _rsqrt({var} + {e}.to(tl.int64).to(tl.float64, bitcast=True).to({tlc}), "
               f"{ct == ek.CT_F64})")
        g.emit(f"{y} = {xc} * {rs}")
        if w is not None:
            g.emit(f"{y} = {y} * {vec(w, 'cols')}")
        if b is not None:
            g.emit(f"{y} = {y} + {vec(b, 'cols')}")
        first = f"(lane % {bn} == 0) & rmask"
        for a, v in ((mean, mu), (rstd, rs)):
            if a is None:
                continue
            g.emit(f"tl.store({g.ptr(a)} + rows, tl.reshape(tl.broadcast_to({v}, {t2}), {t1}).to("
                   f"{g.ptr(a)}.dtype.element_ty), mask={first})")
        return f"tl.reshape({y}, {t1})"
    if op.name == "cross_entropy_rows":
        return _cross_entropy(g, op, read, fresh, ct, tile, mn, start, vec, two)
    if op.name == "softmax_rows":
        out, x, M, N, log = op.call.args
        v, mx, t, e, sm = fresh(), fresh(), fresh(), fresh(), fresh()
        g.emit(f"{v} = tl.where({two('mask')}, {two(read(x, ct))}, -float('inf'))  # exp(-inf - max) adds nothing")
        g.emit(f"{mx} = tl.reduce({v}, 1, _MAXIMUM, keep_dims=True)")
        g.emit(f"{t} = {v} - {mx}")
        g.emit(f"{e} = tl.exp({t})")
        g.emit(f"{sm} = tl.reduce({e}, 1, _SUM, keep_dims=True)")
        return f"tl.reshape({t} - tl.log({sm}), {t1})" if log else f"tl.reshape({e} / {sm}, {t1})"
    if op.name == "softmax_backward_rows":
        out, gr, y, M, N, log = op.call.args
        gv, yv = fresh(), fresh()
        g.emit(f"{gv} = tl.where({two('mask')}, {two(read(gr, ct))}, 0.0)")
        g.emit(f"{yv} = tl.where({two('mask')}, {two(read(y, ct))}, 0.0)")
        if log:
            return f"tl.reshape({gv} - tl.exp({yv}) * tl.reduce({gv}, 1, _SUM, keep_dims=True), {t1})"
        return f"tl.reshape({yv} * ({gv} - tl.reduce({gv} * {yv}, 1, _SUM, keep_dims=True)), {t1})"
    dx, dwp, dbp, gr, x, mean, rstd, w, M, N = op.call.args
    gv, xv = read(gr, ct), read(x, ct)
    g2, xh, gw, c1, dxv = fresh(), fresh(), fresh(), fresh(), fresh()
    g.emit(f"{g2} = tl.where({two('mask')}, {two(gv)}, 0.0)  # masked lanes add nothing")
    g.emit(f"{xh} = ({two(xv)} - {vec(mean, 'rows')}) * {vec(rstd, 'rows')}")
    g.emit(f"{gw} = {g2} * {vec(w, 'cols')}" if w is not None else f"{gw} = {g2}")
    g.emit(f"{c1} = tl.reduce({gw} * {xh}, 1, _SUM, keep_dims=True) / {n_}")
    g.emit(f"{dxv} = ({gw} - tl.reduce({gw}, 1, _SUM, keep_dims=True) / {n_} - {xh} * {c1}) * "
           f"{vec(rstd, 'rows')}")
    pc = fresh()
    g.emit(f"{pc} = tl.arange(0, {bn}).to(tl.int64)")
    for part, val in ((dwp, f"{g2} * {xh}"), (dbp, g2)):
        if part is not None:
            g.emit(f"tl.store({g.ptr(part)} + (pid - {start}).to(tl.int64) * {n_} + {pc}, "
                   f"tl.reduce({val}, 0, _SUM).to({g.ptr(part)}.dtype.element_ty), mask={pc} < {n_})")
    return f"tl.reshape({dxv}, {t1})"



def count_code(g, op, s: int, start, end) -> None:
    """A count segment (one program): ``out[0] = sum(target != value)`` over a contiguous integer array."""
    tlc = _tl_compute(_ct(op.compute))
    t, y = g.ptr(op.ins[0]), g.ptr(op.out)
    n_, v_ = g.arg("n", op.extra["n"]), g.arg("c", op.extra["value"], scalar=True)
    g.emit(f"# segment {s}: count of elements other than a value (call #{op.call.index})", 1)
    g.emit(f"{'if' if s == 0 else 'elif'} pid < {end}:", 1)
    g.emit(f"acc = tl.zeros([BLOCK], dtype={tlc})")
    g.emit(f"for i0 in range(0, {n_}, BLOCK):")
    g.emit("i = i0 + tl.arange(0, BLOCK).to(tl.int64)", 3)
    g.emit(f"t = tl.load({t} + i, mask=i < {n_}, other={v_})", 3)
    g.emit(f"acc += tl.where((i < {n_}) & (t != {v_}), 1.0, 0.0).to({tlc})", 3)
    g.emit(f"tl.store({y}, tl.sum(acc, 0).to({y}.dtype.element_ty))")


def _cross_entropy(g, op, read, fresh, ct, tile, mn, start, vec, two) -> str:
    """Cross-entropy of class targets, forward and backward in one row op (``splits.fuse_cross_entropy``): per row
    ``ce_fwd_kernel``'s log-sum-exp and loss (stored: the row losses, lse) and ``ce_bwd_kernel``'s gradient of the
    logits, ``(softmax - onehot(t)) * g / count``; out-of-range targets recorded in the device's error buffer."""
    from tkernels.backends.triton._launch import error_buffer, f64_bits

    bm, bn = tile
    m_, n_ = mn
    tlc = _tl_compute(ct)
    t2, t1 = f"[{bm}, {bn}]", f"[{bm * bn}]"
    d, rows, lse, z, target, grad, den, ignore, M, C = op.call.args
    tp, ig = g.ptr(target), g.arg("c", ignore, scalar=True)
    n = {k: fresh() for k in ("zero", "one", "rc", "rcm", "cc", "tc", "valid", "bad", "wt", "v", "m", "s", "sn",
                              "mx", "logs", "zt", "loss", "lse", "g", "den", "a", "zb", "dd")}
    e = g.emit
    e(f"{n['zero']} = tl.full({t2}, 0, {tlc})")
    e(f"{n['one']} = tl.reduce({n['zero']}, 1, _SUM, keep_dims=True) + 1  # a [BLOCK_M, 1] column of ones")
    e(f"{n['rc']} = (pid - {start}).to(tl.int64) * {bm} + tl.arange(0, {bm})[:, None]")
    e(f"{n['rcm']} = {n['rc']} < {m_}")
    e(f"{n['cc']} = tl.arange(0, {bn}).to(tl.int64)[None, :]")
    e(f"{n['tc']}, {n['valid']}, {n['bad']}, {n['wt']} = lk._class_target({tp}, {n['rc']}, {tp}, 0, {n['rcm']}, "
      f"{ig}, {n_}, {n['one']}, False)")
    e(f"kerr.record_error({g.ptr(error_buffer(z._device))}, {n['bad']}, tl.load({tp} + {n['rc']}, mask={n['bad']}, "
      f"other=0), {n['rc']}, kerr.CROSS_ENTROPY, {n_})")
    zv = two(read(z, ct))
    e(f"{n['v']} = tl.where({two('mask')}, {zv}, -float('inf'))")
    e(f"{n['m']} = tl.maximum(tl.full({t2}, -float('inf'), {tlc}), {n['v']})")
    e(f"{n['s']} = tl.where({n['v']} == -float('inf'), {n['zero']}, tl.exp({n['v']} - {n['m']}))")
    e(f"{n['sn']} = tl.where({n['v']} != {n['v']}, {n['v']}, {n['zero']})  # a NaN logit makes the row's lse NaN")
    e(f"{n['mx']} = tl.reduce({n['m']}, 1, _MAXIMUM, keep_dims=True)")
    e(f"{n['logs']} = tl.log(tl.reduce(tl.where({n['m']} == -float('inf'), {n['zero']}, {n['s']} * tl.exp({n['m']} - "
      f"{n['mx']})), 1, _SUM, keep_dims=True)) + tl.reduce({n['sn']}, 1, _SUM, keep_dims=True)")
    e(f"{n['zt']} = tl.reduce(tl.where({n['valid']} & ({n['cc']} == {n['tc']}), {n['v']}, {n['zero']}), 1, _SUM, "
      f"keep_dims=True)  # z[t]")
    e(f"{n['loss']} = {n['wt']} * (({n['mx']} - {n['zt']}) + {n['logs']})")
    e(f"{n['loss']} = tl.where({n['valid']}, {n['loss']}, 0 * {n['one']})")
    e(f"{n['loss']} = tl.where({n['bad']}, {n['loss']} + float('nan'), {n['loss']})")
    e(f"{n['lse']} = {n['mx']} + {n['logs']}")
    for a, v in ((rows, n["loss"]), (lse, n["lse"])):
        e(f"tl.store({g.ptr(a)} + {n['rc']}, {v}.to({g.ptr(a)}.dtype.element_ty), mask={n['rcm']})")
    if hasattr(grad, "_storage"):
        e(f"{n['g']} = {n['one']} * tl.load({g.ptr(grad)}).to({tlc})")
    else:
        gb = g.arg("c", f64_bits(grad), scalar=True)
        e(f"{n['g']} = {n['one']} * {gb}.to(tl.int64).to(tl.float64, bitcast=True).to({tlc})")
    e(f"{n['den']} = {n['one']} * tl.load({g.ptr(den)}).to({tlc})")
    e(f"{n['g']} = tl.where({n['den']} != 0, {n['g']} / {n['den']}, 0 * {n['one']})")
    e(f"{n['g']} = tl.where({n['valid']}, {n['g']}, 0 * {n['one']})")
    e(f"{n['a']} = {n['g']} * {n['wt']}")
    e(f"{n['zb']} = tl.where({two('mask')}, {zv}, {n['zero']})")
    e(f"{n['dd']} = tl.exp({n['zb']} - {n['lse']}) * {n['a']} - tl.where({n['cc']} == {n['tc']}, {n['a']}, "
      f"{n['zero']})")
    e(f"{n['dd']} = tl.where({n['bad']}, {n['dd']} + float('nan'), {n['dd']})")
    return f"tl.reshape({n['dd']}, {t1})"


def mean_code(g, op, s: int, start, end) -> None:
    """A mean segment (one program): ``out = sum(rows) / den[0]``, the sum in ``loss_sum_kernel``'s blocks and
    order."""
    from tkernels.backends.triton.ops_loss import SUM_BLOCK

    tlc = _tl_compute(_ct(op.compute))
    out, rows, den, M = op.call.args
    po, pr, pd = g.ptr(out), g.ptr(rows), g.ptr(den)
    m_ = g.arg("n", M)
    g.emit(f"# segment {s}: the mean of the row losses (call #{op.call.index})", 1)
    g.emit(f"{'if' if s == 0 else 'elif'} pid < {end}:", 1)
    g.emit(f"acc = tl.full([1, {SUM_BLOCK}], 0, {tlc})")
    g.emit(f"offs = tl.arange(0, {SUM_BLOCK}).to(tl.int64)[None, :]")
    g.emit(f"for i0 in range(0, {m_}, {SUM_BLOCK}):")
    g.emit(f"acc = acc + tl.load({pr} + (i0 + offs), mask=(i0 + offs) < {m_}, other=0).to({tlc})", 3)
    g.emit(f"tot = tl.reduce(acc, 1, _SUM, keep_dims=True) / tl.load({pd}).to({tlc})")
    g.emit(f"tl.store({po} + offs, tot.to({po}.dtype.element_ty), mask=offs < 1)")
