"""Convolution helpers: im2col (gather an input into a column matrix) and col2im (fold a column matrix back into
an image), the two data-movement halves of an im2col convolution whose GEMMs run on ``matmul.py``.

Geometry (PyTorch's): an (N, C, H, W) image, a (KH, KW) kernel with stride (SH, SW), dilation (DH, DW) and
top/left padding (PT, PL), and an (HO, WO) grid of output positions (L = HO * WO). Column ``ck = (c*KH + i)*KW + j``
of image ``n`` at position ``l = oh*WO + ow`` holds ``x[n, c, oh*SH - PT + i*DH, ow*SW - PL + j*DW]`` (0 in the
padding).

``im2col_kernel`` writes ``col[n, ck, l]`` through three strides (the forward GEMM wants (N, C*KH*KW, L), the weight
gradient (C*KH*KW, N, L)); the input is read through four strides (any view). One element per lane, 1-D grid.

``col2im_kernel`` is the adjoint, written as a gather from the output pixel's point of view: pixel (n, c, h, w)
sums the ``col[n, ck, l]`` entries whose window touched it (oh = (h + PT - i*DH) / SH when that divides exactly
and lands in [0, HO), same for w), looping over the KH x KW kernel offsets. No atomics: each pixel is owned by
one lane and summed in a fixed order (deterministic). The columns are fp32 (fp64 with ``F64``) so the sum and the
optional per-channel bias round once to the output's dtype.

``conv_gemm_kernel`` is the forward convolution as an implicit GEMM (no column matrix): per group, the
(N*HO*WO) x (C/G*KH*KW) column matrix is never stored; each ``BLOCK_M x BLOCK_K`` tile of it is gathered from x
(any strides, padding masked to 0) as it is needed and multiplied with the matching ``BLOCK_K x BLOCK_N`` tile of
the weight (any strides) on ``tl.dot``, as ``matmul.py`` does (its ``DOT`` codes: float16/bfloat16 on tensor
cores, float32 IEEE or TF32, float64; float32 accumulation for halves). The bias is added to the accumulator
before the single rounding into the (N, O, HO, WO) output (any strides). Groups run on the grid's third axis
(``G0`` + program_id(2)).
"""

import triton
import triton.language as tl

from .matmul import config, grouped_tile


@triton.jit
def im2col_kernel(x_ptr, col_ptr, total, C, H, W, KH, KW, HO, WO,
                  sxn, sxc, sxh, sxw, scn, sck, scl,
                  SH, SW, PT, PL, DH, DW,
                  BLOCK: tl.constexpr):
    idx = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = idx < total
    # idx -> (n, ck, l) -> (n, c, i, j, oh, ow)
    L = HO * WO
    pos = idx % L
    r = idx // L
    CK = C * KH * KW
    ck = r % CK
    n = r // CK
    ow = pos % WO
    oh = pos // WO
    j = ck % KW
    t = ck // KW
    i = t % KH
    c = t // KH
    h = oh * SH - PT + i * DH
    w = ow * SW - PL + j * DW
    inside = mask & (h >= 0) & (h < H) & (w >= 0) & (w < W)
    v = tl.load(x_ptr + (n * sxn + c * sxc + h * sxh + w * sxw), mask=inside, other=0)
    tl.store(col_ptr + (n * scn + ck * sck + pos * scl), v, mask=mask)


@triton.jit
def col2im_kernel(col_ptr, b_ptr, y_ptr, total, C, H, W, KH, KW, HO, WO,
                  syn, syc, syh, syw, sb,
                  SH, SW, PT, PL, DH, DW,
                  HAS_BIAS: tl.constexpr, F64: tl.constexpr, BLOCK: tl.constexpr):
    idx = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = idx < total
    # idx -> (n, c, h, w), row-major over the (N, C, H, W) output
    w = idx % W
    r = idx // W
    h = r % H
    r = r // H
    c = r % C
    n = r // C
    if F64:
        acc = tl.zeros([BLOCK], dtype=tl.float64)
    else:
        acc = tl.zeros([BLOCK], dtype=tl.float32)
    L = HO * WO
    row0 = (n * C + c) * (KH * KW)  # the column row of kernel offset (0, 0) of this pixel's channel
    for i in range(0, KH):
        th = h + PT - i * DH
        oh = th // SH
        ok_h = mask & (th >= 0) & (oh * SH == th) & (oh < HO)  # masked: C and NumPy division differ below 0
        for j in range(0, KW):
            tw = w + PL - j * DW
            ow = tw // SW
            ok = ok_h & (tw >= 0) & (ow * SW == tw) & (ow < WO)
            v = tl.load(col_ptr + ((row0 + i * KW + j) * L + oh * WO + ow), mask=ok, other=0)
            acc += v.to(acc.dtype)
    if HAS_BIAS:
        acc += tl.load(b_ptr + c * sb, mask=mask, other=0).to(acc.dtype)
    tl.store(y_ptr + (n * syn + c * syc + h * syh + w * syw), acc.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def conv_gemm_kernel(x_ptr, w_ptr, b_ptr, y_ptr,
                     M, OG, K, CG, H, W, KH, KW, HO, WO, G0,
                     sxn, sxc, sxh, sxw, swo, swc, swh, sww, syn, syc, syh, syw, sb,
                     SH, SW, PT, PL, DH, DW,
                     DOT: tl.constexpr, HAS_BIAS: tl.constexpr,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    # tile of the group's (M = N*HO*WO pixels) x (OG channels) output, grouped along M
    pid_m, pid_n = grouped_tile(tl.program_id(0), M, OG, BLOCK_M, BLOCK_N, GROUP_M)
    grp = G0 + tl.program_id(2).to(tl.int64)  # the convolution group

    # rows: output pixels m -> (image, oh, ow), decoded once; their window's top-left corner in x
    offs_m = pid_m.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    m_mask = offs_m < M
    L = HO * WO
    img = offs_m // L
    pos = offs_m % L
    oh = pos // WO
    ow = pos % WO
    h0 = oh * SH - PT
    w0 = ow * SW - PL
    x_row = img * sxn + grp * CG * sxc
    # columns: the group's output channels
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    n_mask = offs_n < OG
    o = grp * OG + offs_n
    w_col = o * swo

    if DOT == 4:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float64)
    else:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        # reduction index kk -> (input channel c, kernel row i, kernel column j), as the weight's (CG, KH, KW)
        kk = k0 + tl.arange(0, BLOCK_K)
        k_mask = kk < K
        j = kk % KW
        t = kk // KW
        i = t % KH
        c = (t // KH).to(tl.int64)
        h = h0[:, None] + (i * DH)[None, :]
        w = w0[:, None] + (j * DW)[None, :]
        a_mask = m_mask[:, None] & k_mask[None, :] & (h >= 0) & (h < H) & (w >= 0) & (w < W)
        a = tl.load(x_ptr + (x_row[:, None] + c[None, :] * sxc + h * sxh + w * sxw), mask=a_mask, other=0)
        w_k = c * swc + i * swh + j * sww
        b = tl.load(w_ptr + (w_k[:, None] + w_col[None, :]), mask=k_mask[:, None] & n_mask[None, :], other=0)
        if DOT == 0:
            acc = tl.dot(a.to(tl.float16), b.to(tl.float16), acc)
        elif DOT == 1:
            acc = tl.dot(a.to(tl.bfloat16), b.to(tl.bfloat16), acc)
        elif DOT == 2:
            acc = tl.dot(a.to(tl.float32), b.to(tl.float32), acc, input_precision="ieee")
        elif DOT == 3:
            acc = tl.dot(a.to(tl.float32), b.to(tl.float32), acc, input_precision="tf32")
        else:
            # out_dtype stated: Triton 3.6 defaults it to float32 and rejects a float64 accumulator
            acc = tl.dot(a.to(tl.float64), b.to(tl.float64), acc, input_precision="ieee",
                         out_dtype=tl.float64)

    if HAS_BIAS:
        acc += tl.load(b_ptr + o * sb, mask=n_mask, other=0).to(acc.dtype)[None, :]
    y_off = (img * syn + oh * syh + ow * syw)[:, None] + (o * syc)[None, :]
    tl.store(y_ptr + y_off, acc.to(y_ptr.dtype.element_ty), mask=m_mask[:, None] & n_mask[None, :])


# ------------------------------------------------------------------------------------- autotune configs
# float16 / bfloat16 / float32 (IEEE or TF32): pixels are many, channels per group few to hundreds; the gathered
# operand is loaded by the threads (no TMA), so moderate tiles and 2-3 stages. Few configs: each costs seconds of
# compiling (ahead of time in tests/tkernels/cuda/test_aot.py, and at the first tuning on a GPU).
CONV_TC_CONFIGS = [
    config(128, 64, 32, 4, 3),
    config(64, 32, 32, 4, 2),  # few output channels per group, or few pixels
]
CONV_F64_CONFIGS = [
    config(64, 32, 16, 4, 2),
]
CONV_AUTOTUNE_KEY = ["M", "OG", "K", "DOT"]
