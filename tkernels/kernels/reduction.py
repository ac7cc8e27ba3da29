"""Reductions (one kernel family, the op a constexpr code) and scans (cumulative sum and product).

Layout, set up by the host (``tkernels/backends/triton/reduction.py``): the input is seen with its kept axes
first and its reduced axes last (a permuted view, no copy), each group collapsed to at most 6 dimensions. Row
``m`` of the ``M`` output rows starts at ``strided_offset(m, kept sizes, kept strides)`` and element ``r`` of
its ``R`` reduced elements sits ``strided_offset(r, reduced sizes, reduced strides)`` further. Groups of one or
two dimensions (``ROW_ND``/``RED_ND`` = 1 or 2; 0 for more) take the offset inline: a multiply, or a divmod.
The same tile serves rows reduced along their contiguous axis (wide ``BLOCK_R``) and columns reduced across
rows (wide ``BLOCK_M``: the kept axis is the contiguous one, and Triton sees its unit stride as a constant).

A program owns ``BLOCK_M`` rows and walks ``[BLOCK_M, BLOCK_R]`` tiles along them, accumulating per lane in
fp32/fp64/int64 (halves in fp32); the lanes are combined once at the end. ``STAGE`` splits long rows across
programs without atomics: 0 reduces whole rows to the result; 1 reduces the ``R_PER`` elements of split
``program_id(1)`` to a partial state stored at ``y[m * stride_ym + split]`` (with ``aux`` for two-part states:
argmax/argmin indices, logsumexp's scaled sums); 2 reduces those partial states to the result.

NaN semantics follow NumPy/PyTorch: max/min propagate NaN; argmax/argmin count NaN as the extreme and return
the first index among ties (an order on (value, index) pairs, so it survives lane and split combination);
logsumexp shifts by the largest finite value and lets +inf and NaN through.
"""

import triton
import triton.language as tl

from .strided import strided_offset

SUM = tl.constexpr(0)
PROD = tl.constexpr(1)
MAX = tl.constexpr(2)
MIN = tl.constexpr(3)
ANY = tl.constexpr(4)
ALL = tl.constexpr(5)
COUNT = tl.constexpr(6)
MEAN = tl.constexpr(7)
VAR = tl.constexpr(8)  # the second pass: sum((x - mean)^2) / divisor, with the row means in stat_ptr
STD = tl.constexpr(9)
LOGSUMEXP = tl.constexpr(10)
ARGMAX = tl.constexpr(11)
ARGMIN = tl.constexpr(12)
NORM1 = tl.constexpr(13)  # sum |x|
NORM2 = tl.constexpr(14)  # sqrt(sum x^2)
NORM_INF = tl.constexpr(15)  # max |x|
NORM_NINF = tl.constexpr(16)  # min |x|
NORM0 = tl.constexpr(17)  # count of nonzeros, as a float
NORM_P = tl.constexpr(18)  # (sum |x|^p)^(1/p), p a runtime float

OP_CODES = {"sum": 0, "prod": 1, "max": 2, "min": 3, "any": 4, "all": 5, "count_nonzero": 6, "mean": 7, "var": 8,
            "std": 9, "logsumexp": 10, "argmax": 11, "argmin": 12, "norm1": 13, "norm2": 14, "norm_inf": 15,
            "norm_ninf": 16, "norm0": 17, "norm_p": 18}
# ACC: what values are converted to before they are combined
ACC_F32, ACC_F64, ACC_I64 = 0, 1, 2
SCAN_SUM, SCAN_PROD = 0, 1
# The tiles (BLOCK_M, BLOCK_R) a GPU launch uses: a fixed set, as each is a compiled variant (all of them are in
# the AOT table). Rows up to BLOCK_R long take the first that fits, longer rows the last; reductions whose kept
# axis is the contiguous one (columns) take GPU_COLUMN_TILE, coalescing along the rows.
GPU_ROW_TILES = ((128, 16), (32, 64), (8, 256), (2, 1024), (1, 2048))
GPU_COLUMN_TILE = (64, 32)

_INF = tl.constexpr(float("inf"))
_NAN = tl.constexpr(float("nan"))
_I64_MIN = tl.constexpr(-(2**63))
_I64_MAX = tl.constexpr(2**63 - 1)


# The kernels are written for the interpreter's costs too (CI runs them there): each tl operation costs ~0.1 ms
# of Python whatever the block size, a call of a @triton.jit function (tl.sum, tl.max, tl.zeros... are such
# functions) ~2 ms more, and tl.reduce/associative_scan with a custom combine function runs element by element.
# So everything is inlined, with few operations per tile, and lanes are combined by tl.reduce/associative_scan
# with the standard library's own combine functions: single NumPy calls there, the usual trees on a GPU.
_SUM = tl.standard._sum_combine
_PROD = tl.standard._prod_combine
_MAXIMUM = tl.standard._elementwise_max  # NaN-blind (np.nanmax when interpreted): NaN is handled by hand
_MINIMUM = tl.standard._elementwise_min


@triton.jit(do_not_specialize=["scal"])
def reduce_kernel(x_ptr, y_ptr, aux_ptr, stat_ptr, M, R, R_PER, stride_ym, scal,
                  ks1, ks2, ks3, ks4, ks5, kt0, kt1, kt2, kt3, kt4, kt5,
                  rs1, rs2, rs3, rs4, rs5, rt0, rt1, rt2, rt3, rt4, rt5,
                  OP: tl.constexpr, ACC: tl.constexpr, TO_BOOL: tl.constexpr, STAGE: tl.constexpr,
                  ROW_ND: tl.constexpr, RED_ND: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_R: tl.constexpr):
    IS_ARG: tl.constexpr = (OP == ARGMAX) or (OP == ARGMIN)
    IS_MAX: tl.constexpr = (OP == MAX) or (OP == NORM_INF) or (OP == ARGMAX)  # NaN wins, then the largest
    IS_MIN: tl.constexpr = (OP == MIN) or (OP == NORM_NINF) or (OP == ARGMIN)
    COUNTS: tl.constexpr = (OP == ANY) or (OP == ALL) or (OP == COUNT)  # of (non)zeros, in int64
    if ACC == 0:
        zero = tl.full([BLOCK_M, BLOCK_R], 0, tl.float32)
    elif ACC == 1:
        zero = tl.full([BLOCK_M, BLOCK_R], 0, tl.float64)
    else:
        zero = tl.full([BLOCK_M, BLOCK_R], 0, tl.int64)
    if (OP == MEAN) or (OP == VAR) or (OP == STD) or (OP == NORM_P):
        # mean: N; var/std: max(N - correction, 0); norm_p: p. A float64 bit pattern (floats pass as fp32)
        p = scal.to(tl.int64).to(tl.float64, bitcast=True).to(zero.dtype)
    # rows as a [BLOCK_M, 1] column, so that they broadcast against tiles and the keep_dims reductions
    rows = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)[:, None]
    row_mask = rows < M
    if ROW_ND == 1:
        row_off = rows * kt5
    elif ROW_ND == 2:
        row_off = (rows // ks5) * kt4 + (rows % ks5) * kt5
    else:
        row_off = strided_offset(rows, ks1, ks2, ks3, ks4, ks5, kt0, kt1, kt2, kt3, kt4, kt5)
    cols = tl.arange(0, BLOCK_R).to(tl.int64)  # element offsets may pass 2**31 whatever R is
    if STAGE == 1:  # this program's slice of the rows
        split = tl.program_id(1).to(tl.int64)
        r_lo = split * R_PER
        r_hi = tl.minimum(r_lo + R_PER, R)
    else:
        r_lo = 0
        r_hi = R
    # the identity of each op's combination (what masked lanes contribute)
    if COUNTS:
        ident = tl.full([BLOCK_M, BLOCK_R], 0, tl.int64)
    elif OP == PROD:
        ident = zero + 1
    elif IS_MAX or (OP == LOGSUMEXP):
        if ACC == 2:
            ident = tl.full([BLOCK_M, BLOCK_R], _I64_MIN, tl.int64)
        else:
            ident = zero - _INF
    elif IS_MIN:
        if ACC == 2:
            ident = tl.full([BLOCK_M, BLOCK_R], _I64_MAX, tl.int64)
        else:
            ident = zero + _INF
    else:
        ident = zero
    acc = ident
    if IS_ARG:  # lane j starts at element r_lo + j; partial states carry their own indices
        if STAGE == 2:
            best_i = tl.full([BLOCK_M, BLOCK_R], _I64_MAX, tl.int64)
        else:
            best_i = (r_lo + cols)[None, :] + tl.full([BLOCK_M, BLOCK_R], 0, tl.int64)
    if OP == LOGSUMEXP:  # per lane: acc the largest finite value, s the sum of exp(x - acc), sp +inf/NaN seen
        s = zero
        sp = zero
    if (OP == VAR) or (OP == STD):  # two passes: the row means first (given by the host for split rows)
        if STAGE == 0:
            tot = zero
            for r0 in range(0, R, BLOCK_R):
                r = r0 + cols
                if RED_ND == 1:
                    red_off = r * rt5
                elif RED_ND == 2:
                    red_off = (r // rs5) * rt4 + (r % rs5) * rt5
                else:
                    red_off = strided_offset(r, rs1, rs2, rs3, rs4, rs5, rt0, rt1, rt2, rt3, rt4, rt5)
                v = tl.load(x_ptr + (row_off + red_off[None, :]), mask=row_mask & (r < R)[None, :], other=0)
                tot = tot + v.to(zero.dtype)
            mu = tl.reduce(tot, 1, _SUM, keep_dims=True) / R
        elif STAGE == 1:
            mu = tl.load(stat_ptr + rows, mask=row_mask, other=0).to(zero.dtype)
    for r0 in range(r_lo, r_hi, BLOCK_R):
        r = r0 + cols
        if RED_ND == 1:
            red_off = r * rt5
        elif RED_ND == 2:
            red_off = (r // rs5) * rt4 + (r % rs5) * rt5
        else:
            red_off = strided_offset(r, rs1, rs2, rs3, rs4, rs5, rt0, rt1, rt2, rt3, rt4, rt5)
        mask = row_mask & (r < r_hi)[None, :]
        offs = row_off + red_off[None, :]
        v = tl.load(x_ptr + offs, mask=mask, other=0)
        if TO_BOOL:  # a bool accumulator: sums are "any", products "all"
            v = v != 0
        v = v.to(zero.dtype)
        if OP == LOGSUMEXP:
            fin = ((v - v) == 0) & mask  # finite and in range
            xf = tl.where(fin, v, ident)
            m_new = tl.maximum(acc, xf)
            e = tl.exp(xf - m_new)
            if STAGE == 2:  # partial states are (shift, sum of exp(x - shift)) pairs
                e = e * tl.load(aux_ptr + offs, mask=mask, other=0)
            s = s * tl.where(acc == ident, zero, tl.exp(acc - m_new)) + tl.where(fin, e, zero)
            sp = sp + tl.where(fin | (v == ident) | (mask == 0), zero, v)  # +inf stays inf, NaN poisons
            acc = m_new
        elif IS_ARG:
            v = tl.where(mask, v, ident)
            if OP == ARGMAX:
                take = v > acc
            else:
                take = v < acc
            if ACC != 2:  # NaN beats everything but an earlier NaN
                take = take | ((v != v) & (acc == acc))
            if STAGE == 2:  # partial states: equal values keep the smaller index
                idx = tl.load(aux_ptr + offs, mask=mask, other=_I64_MAX)
                take = take | ((v == acc) & (idx < best_i))
                if ACC != 2:
                    take = take | ((v != v) & (idx < best_i))
                best_i = tl.where(take, idx, best_i)
            else:  # indices increase along a lane: only a strictly better value (or a first NaN) takes over
                best_i = tl.where(take, r[None, :], best_i)
            acc = tl.where(take, v, acc)
        else:
            if STAGE != 2:  # the term each element adds (partial states are terms already)
                if (OP == ANY) or (OP == COUNT):
                    v = (v != 0).to(tl.int64)
                elif OP == ALL:  # all = no zeros: count the zeros
                    v = (v == 0).to(tl.int64)
                elif (OP == VAR) or (OP == STD):
                    v = v - mu
                    v = v * v
                elif (OP == NORM1) or (OP == NORM_INF) or (OP == NORM_NINF):
                    v = tl.abs(v)
                elif OP == NORM2:
                    v = v * v
                elif OP == NORM0:
                    v = (v != 0).to(zero.dtype)
                elif OP == NORM_P:  # |v|^p: |0|^p is 0 for p > 0, inf for p < 0, as exp(p * -inf) gives
                    v = tl.exp(p * tl.log(tl.abs(v)))
            if (OP == SUM) or (OP == MEAN) or (OP == ANY) or (OP == COUNT) or (OP == NORM1) or (OP == NORM2) or \
                    (OP == NORM0):
                acc = acc + v  # masked loads gave 0, whose term is 0
            else:
                v = tl.where(mask, v, ident).to(ident.dtype)  # (partial counts come as int64 already)
                if OP == PROD:
                    acc = acc * v
                elif IS_MAX:
                    acc = tl.where(v > acc, v, acc)
                elif IS_MIN:
                    acc = tl.where(v < acc, v, acc)
                else:
                    acc = acc + v
                if IS_MAX or IS_MIN:
                    if ACC != 2:  # NaN sticks
                        acc = tl.where(v != v, v, acc)
    # each row's lanes combined (tl.reduce's max/min ignore NaN: it is handled by hand)
    if STAGE == 1:
        out = rows * stride_ym + split
    else:
        out = rows
    if (IS_MAX or IS_MIN) and (ACC != 2):
        nans = tl.reduce(tl.where(acc != acc, acc, zero), 1, _SUM, keep_dims=True)  # NaN where a lane holds NaN
    if OP == LOGSUMEXP:
        mx = tl.reduce(acc, 1, _MAXIMUM, keep_dims=True)
        tot = tl.reduce(tl.where(acc == ident, zero, s * tl.exp(acc - mx)), 1, _SUM, keep_dims=True)
        special = tl.reduce(sp, 1, _SUM, keep_dims=True)
        if STAGE == 1:
            tl.store(y_ptr + out, tl.where(special != 0, special, mx), mask=row_mask)
            tl.store(aux_ptr + out, tot, mask=row_mask)
        else:
            res = tl.where(special != 0, special, tl.log(tot) + mx)
            tl.store(y_ptr + out, res.to(y_ptr.dtype.element_ty), mask=row_mask)
    elif IS_ARG:
        if OP == ARGMAX:
            best = tl.reduce(acc, 1, _MAXIMUM, keep_dims=True)
        else:
            best = tl.reduce(acc, 1, _MINIMUM, keep_dims=True)
        res_i = tl.reduce(tl.where(acc == best, best_i, _I64_MAX), 1, _MINIMUM, keep_dims=True)
        if ACC != 2:  # NaN lanes: the first NaN wins
            has_nan = nans != nans
            first_nan = tl.reduce(tl.where(acc != acc, best_i, _I64_MAX), 1, _MINIMUM, keep_dims=True)
            res_i = tl.where(has_nan, first_nan, res_i)
        if STAGE == 1:
            if ACC != 2:
                best = tl.where(has_nan, nans, best)
            tl.store(y_ptr + out, best, mask=row_mask)
            tl.store(aux_ptr + out, res_i, mask=row_mask)
        else:
            tl.store(y_ptr + out, res_i, mask=row_mask)
    else:
        if OP == PROD:  # no product reduction: the last column of the running products
            res = tl.reduce(tl.where(cols[None, :] == BLOCK_R - 1, tl.associative_scan(acc, 1, _PROD), zero), 1,
                            _SUM, keep_dims=True)
        elif IS_MAX:
            res = tl.reduce(acc, 1, _MAXIMUM, keep_dims=True)
        elif IS_MIN:
            res = tl.reduce(acc, 1, _MINIMUM, keep_dims=True)
        else:
            res = tl.reduce(acc, 1, _SUM, keep_dims=True)
        if (IS_MAX or IS_MIN) and (ACC != 2):  # 0, or the NaN of a NaN lane
            res = res + nans
        if STAGE != 1:
            if OP == ALL:
                res = res == 0
            elif (OP == MEAN) or (OP == VAR):
                res = res / p
            elif OP == STD:
                res = tl.sqrt(res / p)
            elif OP == NORM2:
                res = tl.sqrt(res)
            elif OP == NORM_P:  # s^(1/p): 0 gives 0 (p > 0) or inf (p < 0); inf gives inf or 0
                res = tl.exp(tl.log(res) / p)
        tl.store(y_ptr + out, res.to(y_ptr.dtype.element_ty), mask=row_mask)


@triton.jit
def scan_kernel(x_ptr, y_ptr, M, L, stride_xl, stride_yl,
                ks1, ks2, ks3, ks4, ks5, xt0, xt1, xt2, xt3, xt4, xt5, yt0, yt1, yt2, yt3, yt4, yt5,
                OP: tl.constexpr, ACC: tl.constexpr, TO_BOOL: tl.constexpr, INITIAL: tl.constexpr,
                ROW_ND: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_R: tl.constexpr):
    # One program scans BLOCK_M whole rows of length L chunk by chunk: a scan within the chunk, plus (times) the
    # running total of the chunks before it, carried by the loop; so rows of any length take one program.
    rows = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)[:, None]  # a [BLOCK_M, 1] column
    row_mask = rows < M
    if ROW_ND == 1:
        x_row = rows * xt5
        y_row = rows * yt5
    elif ROW_ND == 2:
        hi = rows // ks5
        lo = rows % ks5
        x_row = hi * xt4 + lo * xt5
        y_row = hi * yt4 + lo * yt5
    else:
        x_row = strided_offset(rows, ks1, ks2, ks3, ks4, ks5, xt0, xt1, xt2, xt3, xt4, xt5)
        y_row = strided_offset(rows, ks1, ks2, ks3, ks4, ks5, yt0, yt1, yt2, yt3, yt4, yt5)
    if ACC == 0:
        carry = tl.full([BLOCK_M, 1], OP, tl.float32)  # the identity: 0 for sums, 1 for products
    elif ACC == 1:
        carry = tl.full([BLOCK_M, 1], OP, tl.float64)
    else:
        carry = tl.full([BLOCK_M, 1], OP, tl.int64)
    if INITIAL:  # include_initial: the identity first, every result one place later
        tl.store(y_ptr + y_row, carry.to(y_ptr.dtype.element_ty), mask=row_mask)
        y_row = y_row + stride_yl
    cols = tl.arange(0, BLOCK_R).to(tl.int64)
    last = cols[None, :] == BLOCK_R - 1
    for r0 in range(0, L, BLOCK_R):
        r = r0 + cols
        mask = row_mask & (r < L)[None, :]
        v = tl.load(x_ptr + (x_row + (r * stride_xl)[None, :]), mask=mask, other=OP)  # masked: the identity
        if TO_BOOL:  # a bool accumulator: running "any" / "all"
            v = v != 0
        v = v.to(carry.dtype)
        if OP == 0:
            res = tl.associative_scan(v, 1, _SUM) + carry
        else:
            res = tl.associative_scan(v, 1, _PROD) * carry
        tl.store(y_ptr + (y_row + (r * stride_yl)[None, :]), res.to(y_ptr.dtype.element_ty), mask=mask)
        carry = tl.reduce(tl.where(last, res, 0), 1, _SUM, keep_dims=True)  # the last column: the running total
