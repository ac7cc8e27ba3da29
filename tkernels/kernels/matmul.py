"""Matrix multiplication: one tiled kernel for every dtype, batched, strided, with a fused epilogue.

``C[b] = act(A[b] @ B[b] + bias) + R[b]`` for ``A (M, K)``, ``B (K, N)``, ``C (M, N)`` per batch entry ``b``
(program_id(2)), every operand read in place through its strides (a transposed operand is just other
strides; a broadcast batch dimension has stride 0). As in Triton's tutorial 03: each program computes one
``BLOCK_M x BLOCK_N`` tile of C, walking K in steps of ``BLOCK_K``; programs are ordered in groups of
``GROUP_M`` row blocks (the "swizzle") so that consecutive programs reuse the same A rows and B columns from L2.

``DOT`` selects how a tile product is computed and what accumulates:
- ``DOT_F16`` / ``DOT_BF16``: operands converted to float16 / bfloat16, ``tl.dot`` on tensor cores (wgmma on
  sm_90, mma on sm_80), float32 accumulator;
- ``DOT_F32``: float32 operands, IEEE products (``input_precision="ieee"``: FMA on CUDA cores);
  ``DOT_TF32``: the same on tensor cores in TF32 (``tkernels.backends.matmul.allow_tf32``);
- ``DOT_F64``: float64 operands and accumulator, IEEE (``tl.dot`` in float64: exact fp64 products);
- ``DOT_I64``: integer operands widened to int64, products summed in int64 by a broadcast multiply and a sum
  (no tensor cores; NumPy's wrap-around results once cast to the output dtype).

The epilogue (``HAS_BIAS``, ``ACT``, ``HAS_RESIDUAL``) runs on the accumulator before the single rounding to
C's dtype: this is ``tkernels.ops.linear``. Offsets are 64-bit (strides are widened once per program; the K
loop only advances pointers), so operands past 2**31 elements are fine.
"""

import triton
import triton.language as tl

from . import elementwise_math as m

DOT_F16, DOT_BF16, DOT_F32, DOT_TF32, DOT_F64, DOT_I64 = range(6)
ACT_CODES = {None: 0, "relu": 1, "gelu": 2, "gelu_tanh": 3, "silu": 4}

SQRT1_2 = tl.constexpr(0.7071067811865476)
SQRT_2_OVER_PI = tl.constexpr(0.7978845608028654)


@triton.jit
def grouped_tile(pid, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """(pid_m, pid_n): the tile of an ``M x N`` output that program ``pid`` computes, ``GROUP_M`` row tiles in
    turn for each column tile (L2 reuse of the operands, Triton's tutorial 03)."""
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    first_pid_m = (pid // num_pid_in_group) * GROUP_M
    group_size_m = min(tl.cdiv(M, BLOCK_M) - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@triton.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr, bias_ptr, r_ptr,
    M, N, K,
    stride_ab, stride_am, stride_ak,
    stride_bb, stride_bk, stride_bn,
    stride_cb, stride_cm, stride_cn,
    stride_bias,
    stride_rb, stride_rm, stride_rn,
    DOT: tl.constexpr, ACT: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_RESIDUAL: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):
    pid_m, pid_n = grouped_tile(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    pid_b = tl.program_id(2).to(tl.int64)

    # 64-bit strides: offsets are computed once per program, the K loop only advances pointers
    stride_am = tl.cast(stride_am, tl.int64)
    stride_ak = tl.cast(stride_ak, tl.int64)
    stride_bk = tl.cast(stride_bk, tl.int64)
    stride_bn = tl.cast(stride_bn, tl.int64)

    # rows/columns past M/N wrap around (valid addresses, so the loads need no M/N masks); the store masks them
    offs_am = ((pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M).to(tl.int64)
    offs_bn = ((pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N).to(tl.int64)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + pid_b * stride_ab + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + pid_b * stride_bb + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)

    # (helpers are inlined: each call of a jit function costs milliseconds in the interpreter)
    if DOT == 4:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float64)
    elif DOT == 5:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int64)
    else:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K  # only the last step is partial
        a = tl.load(a_ptrs, mask=offs_k[None, :] < k_left, other=0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0)
        # acc + a @ b with the operands converted as DOT says (a no-op when they already have that type)
        if DOT == 0:
            acc = tl.dot(a.to(tl.float16), b.to(tl.float16), acc)
        elif DOT == 1:
            acc = tl.dot(a.to(tl.bfloat16), b.to(tl.bfloat16), acc)
        elif DOT == 2:
            acc = tl.dot(a.to(tl.float32), b.to(tl.float32), acc, input_precision="ieee")
        elif DOT == 3:
            acc = tl.dot(a.to(tl.float32), b.to(tl.float32), acc, input_precision="tf32")
        elif DOT == 4:
            # out_dtype stated: Triton 3.6 defaults it to float32 and rejects a float64 accumulator
            acc = tl.dot(a.to(tl.float64), b.to(tl.float64), acc, input_precision="ieee",
                         out_dtype=tl.float64)
        else:  # (BLOCK_M, BLOCK_K, BLOCK_N) products: an integer tl.dot exists only for int8 -> int32
            acc += tl.sum(a.to(tl.int64)[:, :, None] * b.to(tl.int64)[None, :, :], axis=1)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    # epilogue on the accumulator (float32 / float64 / int64), then one rounding to C's dtype
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask_n = offs_cn < N
    c_mask = (offs_cm[:, None] < M) & mask_n[None, :]
    offs_cm = offs_cm.to(tl.int64)
    offs_cn = offs_cn.to(tl.int64)
    if HAS_BIAS:
        bias = tl.load(bias_ptr + offs_cn * stride_bias, mask=mask_n, other=0)
        acc += bias.to(acc.dtype)[None, :]
    if ACT == 1:
        acc = tl.where(acc < 0, 0.0, acc)  # NaN stays NaN, as torch.relu
    elif ACT == 2:
        acc = 0.5 * acc * (1.0 + tl.erf(acc * SQRT1_2))
    elif ACT == 3:
        acc = 0.5 * acc * (1.0 + m.tanh((acc + 0.044715 * acc * acc * acc) * SQRT_2_OVER_PI, DOT == 4))
    elif ACT == 4:
        acc = acc / (1.0 + tl.exp(-acc))  # exp overflows to inf for very negative x: the exact -0
    if HAS_RESIDUAL:
        r_ptrs = r_ptr + pid_b * stride_rb + (offs_cm[:, None] * stride_rm + offs_cn[None, :] * stride_rn)
        acc += tl.load(r_ptrs, mask=c_mask, other=0).to(acc.dtype)
    c_ptrs = c_ptr + pid_b * stride_cb + (offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn)
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=c_mask)


# ------------------------------------------------------------------------------------- autotune configs
def config(bm, bn, bk, warps, stages, group=8):
    return triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": group}, num_warps=warps,
                         num_stages=stages)


# Tensor-core dtypes (float16, bfloat16, float32/TF32 and IEEE float32): Hopper-friendly tiles (BLOCK_M >= 64
# for wgmma's 64-row instructions, 4 or 8 warps = 1 or 2 warpgroups), 3-4 stages of software pipelining.
# Configs that overflow shared memory for 4-byte operands (128x256x64 fp32) fail to launch and are skipped by
# the tuner.
TC_CONFIGS = [
    config(128, 256, 64, 8, 3),
    config(128, 128, 64, 8, 3),
    config(128, 128, 64, 4, 4),
    config(128, 128, 32, 4, 4),
    config(128, 64, 64, 4, 4),
    config(64, 128, 32, 4, 4),
    config(64, 64, 64, 4, 3),
]
# float64: the accumulator costs 2 registers per element; smaller tiles
F64_CONFIGS = [
    config(64, 64, 32, 4, 3),
    config(128, 64, 16, 8, 3),
    config(32, 64, 32, 4, 4),
]
# integers: the (BLOCK_M, BLOCK_K, BLOCK_N) product tensor lives in registers; small K steps
I64_CONFIGS = [
    config(32, 32, 8, 4, 2),
    config(64, 64, 4, 8, 2),
]
AUTOTUNE_KEY = ["M", "N", "K", "DOT"]
