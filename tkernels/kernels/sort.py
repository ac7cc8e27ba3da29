"""Sorting and searching on cuda: row-wise sort/argsort (and topk, unique through them), searchsorted.

Keys. Every element becomes an int64 key whose integer order is the wanted order: integers and bools as
they are; floats (halves through float32) by their bit pattern with the magnitude bits of negatives flipped,
``-0.0`` folded onto ``+0.0`` and every NaN onto one key above ``+inf`` (NaN last, as NumPy sorts). A
descending sort complements the keys (``~k``: NaN first). Pairs ``(key, original index)`` compare
lexicographically, so every sort is stable, descending included (equal elements keep their order), and no
two pairs are equal.

Method. ``block_sort_kernel`` sorts tiles of ``BLOCK`` (a power of two) elements of ``ROWS`` rows with a
bitonic network over the pairs (padding: the largest key, indices past the row); rows up to ``BLOCK`` are
done in that one launch. Longer rows are sorted tile by tile and then merged by ``merge_kernel``, one launch
per doubling of the sorted run width: each element finds its rank in the partner run by binary search
(merge path: ``rank in own run + rank in the other run`` is its slot in the merged run), so a pass is one
fully parallel gather-free scatter, ``log2(L / BLOCK)`` passes in all. The sorted keys and indices go to
int64 scratch rows; values are gathered from the input by index afterwards.
"""

import triton
import triton.language as tl

from .strided import strided_offset

KEY_INT, KEY_F32, KEY_F64 = 0, 1, 2
KEY_U32, KEY_U64 = 3, 4  # unsigned keys moved into the signed range of their width, order kept
_I64_MIN = tl.constexpr(-2**63)
_I64_MAX = tl.constexpr(2**63 - 1)


@triton.jit
def _keys(x, KEY: tl.constexpr):
    if KEY == 0:
        k = x.to(tl.int64)
    elif KEY == 3:
        k = x.to(tl.int64) - 2147483648  # in int32's range: PACK shifts it into the high half
    elif KEY == 4:
        k = x.to(tl.int64, bitcast=True) ^ _I64_MIN
    elif KEY == 1:
        v = x.to(tl.float32)
        v = tl.where(v == 0, 0.0, v)
        b = v.to(tl.int32, bitcast=True)
        b = tl.where(b < 0, b ^ 0x7FFFFFFF, b)
        k = tl.where(v != v, 0x7FFFFFFF, b).to(tl.int64)
    else:
        v = x.to(tl.float64)
        v = tl.where(v == 0, 0.0, v)
        b = v.to(tl.int64, bitcast=True)
        b = tl.where(b < 0, b ^ 0x7FFFFFFFFFFFFFFF, b)
        k = tl.where(v != v, 0x7FFFFFFFFFFFFFFF - 1, b)
    return k


@triton.jit
def block_sort_kernel(x_ptr, key_ptr, idx_ptr, M, L, stride_l, s1, s2, s3, s4, s5, xt0, xt1, xt2, xt3, xt4, xt5,
                      KEY: tl.constexpr, DESCENDING: tl.constexpr, PACK: tl.constexpr, ROWS: tl.constexpr,
                      BLOCK: tl.constexpr, LOG: tl.constexpr):
    # program (p, t): rows p*ROWS.., elements t*BLOCK.. of each; row m of x starts at strided_offset(m, ...)
    m = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    j = tl.program_id(1).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = (m < M)[:, None] & (j < L)[None, :]
    row = strided_offset(m, s1, s2, s3, s4, s5, xt0, xt1, xt2, xt3, xt4, xt5)
    x = tl.load(x_ptr + row[:, None] + j[None, :] * stride_l, mask=mask, other=0)
    k = _keys(x, KEY)
    if DESCENDING:
        k = ~k
    if not PACK:
        k = tl.where(mask, k, _I64_MAX)
    ix = tl.zeros([ROWS, BLOCK], dtype=tl.int64) + j[None, :]
    if PACK:  # 32-bit keys: one int64 (key << 32 | index) per element, half the work per step
        k = tl.where(mask, (k << 32) | ix, _I64_MAX)
    # bitonic network on [ROWS, BLOCK]: stage s merges runs of 2**s; step t compares elements 2**t apart.
    # The partner of each element is found by viewing the row as [.., 2, 2**t] (split on a size-2 axis).
    for s in tl.static_range(1, LOG + 1):
        for u in tl.static_range(s):
            # step t = s - 1 - u compares elements 2**t apart (written inline: a name bound in an unrolled body
            # is not a constexpr any more when compiled)
            kl, kr = tl.split(tl.permute(tl.reshape(k, [ROWS * (BLOCK >> (s - u)), 2, 1 << (s - 1 - u)]), (0, 2, 1)))
            # runs of 2**s ascend or descend in turn (the last stage ascends everywhere)
            if s == LOG:
                gt = kl > kr
            else:
                blk = tl.arange(0, ROWS * (BLOCK >> (s - u)))[:, None]
                gt = (kl > kr) != (((blk >> u) & 1) == 1)
            if not PACK:
                il, ir = tl.split(tl.permute(tl.reshape(ix, [ROWS * (BLOCK >> (s - u)), 2, 1 << (s - 1 - u)]),
                                             (0, 2, 1)))
                if s == LOG:
                    gt = gt | ((kl == kr) & (il > ir))
                else:
                    gt = gt != ((kl == kr) & (il > ir))
                ix = tl.reshape(tl.permute(tl.join(tl.where(gt, ir, il), tl.where(gt, il, ir)), (0, 2, 1)),
                                [ROWS, BLOCK])
            k = tl.reshape(tl.permute(tl.join(tl.where(gt, kr, kl), tl.where(gt, kl, kr)), (0, 2, 1)),
                           [ROWS, BLOCK])
    if PACK:
        ix = k & 0xFFFFFFFF
        k = k >> 32
    o = m[:, None] * L + j[None, :]
    tl.store(key_ptr + o, k, mask=mask)
    tl.store(idx_ptr + o, ix, mask=mask)


@triton.jit
def merge_kernel(kin_ptr, iin_ptr, kout_ptr, iout_ptr, n, L, W, STEPS, BLOCK: tl.constexpr):
    # merge sorted runs of W (within each row of L) pairwise into runs of 2W
    pid = tl.program_id(0).to(tl.int64)
    p = pid * BLOCK + tl.arange(0, BLOCK)
    mask = p < n
    row = p // L
    q = p - row * L
    start = (q // W) * W
    other = start ^ W  # the partner run (W is a power of two)
    olen = tl.minimum(tl.maximum(L - other, 0), W)
    k = tl.load(kin_ptr + p, mask=mask, other=0)
    ix = tl.load(iin_ptr + p, mask=mask, other=0)
    lo = tl.zeros([BLOCK], dtype=tl.int64)
    hi = olen
    base = row * L + other
    for _ in range(STEPS):  # rank of (k, ix) in the partner run: count of smaller pairs
        active = lo < hi
        mid = (lo + hi) // 2
        k2 = tl.load(kin_ptr + base + mid, mask=mask & active, other=0)
        i2 = tl.load(iin_ptr + base + mid, mask=mask & active, other=0)
        less = (k2 < k) | ((k2 == k) & (i2 < ix))
        lo = tl.where(active & less, mid + 1, lo)
        hi = tl.where(active & ~less, mid, hi)
    dst = row * L + tl.minimum(start, other) + (q - start) + lo
    tl.store(kout_ptr + dst, k, mask=mask)
    tl.store(iout_ptr + dst, ix, mask=mask)


@triton.jit
def _lt(a, b, IS_FLOAT: tl.constexpr):
    # a < b with NaN the largest value (the order of sorted arrays)
    if IS_FLOAT:
        return (a < b) | ((b != b) & (a == a))
    else:
        return a < b


@triton.jit
def searchsorted_kernel(a_ptr, v_ptr, s_ptr, out_ptr, n, M, L, stride_ar, stride_sr, STEPS,
                        RIGHT: tl.constexpr, SORTER: tl.constexpr, CT: tl.constexpr, BLOCK: tl.constexpr):
    # v (B, M) contiguous; a row r of L sorted values at r * stride_ar (stride 0: one row for all)
    pid = tl.program_id(0).to(tl.int64)
    i = pid * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    r = i // M
    if CT == 0:
        v = tl.load(v_ptr + i, mask=mask, other=0).to(tl.int64)
    elif CT == 1:
        v = tl.load(v_ptr + i, mask=mask, other=0).to(tl.float32)
    else:
        v = tl.load(v_ptr + i, mask=mask, other=0).to(tl.float64)
    lo = tl.zeros([BLOCK], dtype=tl.int64)
    hi = lo + L
    for _ in range(STEPS):
        active = lo < hi
        mid = (lo + hi) // 2
        if SORTER:
            pos = tl.load(s_ptr + r * stride_sr + mid, mask=mask & active, other=0).to(tl.int64)
        else:
            pos = mid
        a = tl.load(a_ptr + r * stride_ar + pos, mask=mask & active, other=0).to(v.dtype)
        if RIGHT:
            go = ~_lt(v, a, CT != 0)  # a <= v: insert after
        else:
            go = _lt(a, v, CT != 0)
        lo = tl.where(active & go, mid + 1, lo)
        hi = tl.where(active & ~go, mid, hi)
    tl.store(out_ptr + i, lo, mask=mask)


@triton.jit
def unique_flag_kernel(key_ptr, idx_ptr, x_ptr, f_ptr, n, IS_FLOAT: tl.constexpr, BLOCK: tl.constexpr):
    # f[i] = 1 where sorted element i starts a new group: first, differs from its predecessor, or NaN
    pid = tl.program_id(0).to(tl.int64)
    i = pid * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    k = tl.load(key_ptr + i, mask=mask, other=0)
    prev = tl.load(key_ptr + i - 1, mask=mask & (i > 0), other=0)
    new = (i == 0) | (k != prev)
    if IS_FLOAT:
        x = tl.load(x_ptr + tl.load(idx_ptr + i, mask=mask, other=0), mask=mask, other=0)
        new = new | (x != x)
    tl.store(f_ptr + i, new.to(tl.int64), mask=mask)


@triton.jit
def unique_scatter_kernel(x_ptr, idx_ptr, pos_ptr, val_ptr, first_ptr, start_ptr, inv_ptr, n,
                          FIRST: tl.constexpr, INVERSE: tl.constexpr, BLOCK: tl.constexpr):
    # group g = pos[i] - 1 of sorted element i; a group's start writes its value, first index and position
    pid = tl.program_id(0).to(tl.int64)
    i = pid * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    pos = tl.load(pos_ptr + i, mask=mask, other=1)
    prev = tl.load(pos_ptr + i - 1, mask=mask & (i > 0), other=0)
    ix = tl.load(idx_ptr + i, mask=mask, other=0)
    g = pos - 1
    sel = mask & (pos > prev)
    tl.store(val_ptr + g, tl.load(x_ptr + ix, mask=sel), mask=sel)
    tl.store(start_ptr + g, i, mask=sel)
    if FIRST:
        tl.store(first_ptr + g, ix, mask=sel)
    if INVERSE:
        tl.store(inv_ptr + ix, g, mask=mask)


@triton.jit
def unique_count_kernel(start_ptr, c_ptr, count, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    g = pid * BLOCK + tl.arange(0, BLOCK)
    mask = g < count
    s = tl.load(start_ptr + g, mask=mask, other=0)
    e = tl.load(start_ptr + g + 1, mask=mask & (g + 1 < count), other=n)
    tl.store(c_ptr + g, e - s, mask=mask)
