"""Fused multi-tensor optimizer steps (Adam/AdamW, SGD): ONE launch updates every tensor of a parameter group.

Multi-tensor apply, as PyTorch's ``multi_tensor_apply``: the host builds
- ``hdr``: the step's scalars as float64 bit patterns (int64 slots; flags as 0/1);
- ``info``: one row of ``INFO_COLS`` int64 per tensor: addresses of param, grad and state tensors, numel, dtype
  code (addresses loaded from memory and bitcast to typed pointers: the dtype is a runtime switch, so tensors of
  different dtypes share the launch);
- ``tiles``: one (tensor index, start) pair per program; a program updates ``BLOCK`` elements of one tensor.

Math is fp32 for float32/float16/bfloat16 tensors (state and params stored back in their own dtype), fp64 for
float64 ones, in the order of the per-parameter reference (nn/optim): PyTorch's single-tensor arithmetic. Scalars
arrive as float64 and are rounded to fp32 for fp32 math, as NumPy/PyTorch round a Python float operand.
``tl.sqrt_rn`` / ``tl.div_rn``: IEEE-rounded (plain ``tl.sqrt`` and ``/`` are approximate in fp32 on the GPU).

When every address is 16-byte aligned (``ALIGNED``; allocator blocks are), full tiles load unmasked with
alignment hints (128-bit accesses) and only a tensor's last tile is masked; otherwise every tile is masked.
Compiled and interpreted alike (TKERNELS_INTERPRET=1 reads the host addresses of interpreted cuda memory).
"""

import triton
import triton.language as tl

INFO_COLS = 8  # p, g, state0, state1, state2, numel, dtype code, step count (capturable Adam) or pad
HDR_SLOTS = 16
DT_F32, DT_F16, DT_BF16, DT_F64 = 0, 1, 2, 3


@triton.jit
def _ptrs(base, offs, FULL: tl.constexpr, ALIGNED: tl.constexpr, BLOCK: tl.constexpr):
    ptrs = base + offs
    if FULL and ALIGNED:  # a tile starts BLOCK-aligned in a 16-byte-aligned tensor
        ptrs = tl.max_contiguous(tl.multiple_of(ptrs, 16), BLOCK)
    return ptrs


@triton.jit
def _load(base, offs, n, CT: tl.constexpr, FULL: tl.constexpr, ALIGNED: tl.constexpr, BLOCK: tl.constexpr):
    ptrs = _ptrs(base, offs, FULL, ALIGNED, BLOCK)
    if FULL:
        v = tl.load(ptrs)
    else:
        v = tl.load(ptrs, mask=offs < n, other=0)
    return v.to(CT)


@triton.jit
def _store(base, offs, n, v, FULL: tl.constexpr, ALIGNED: tl.constexpr, BLOCK: tl.constexpr):
    ptrs = _ptrs(base, offs, FULL, ALIGNED, BLOCK)
    if FULL:
        tl.store(ptrs, v.to(base.dtype.element_ty))
    else:
        tl.store(ptrs, v.to(base.dtype.element_ty), mask=offs < n)


@triton.jit
def _f(hdr_ptr, i, CT: tl.constexpr):
    """Header slot ``i`` (a float64 bit pattern) in the compute type."""
    return tl.load(hdr_ptr + i).to(tl.float64, bitcast=True).to(CT)


@triton.jit
def _sqrt(x, F64: tl.constexpr):
    if F64:
        r = tl.sqrt(x)  # IEEE in fp64
    else:
        r = tl.sqrt_rn(x)
    return r


@triton.jit
def _div(a, b, F64: tl.constexpr):
    if F64:
        r = a / b
    else:
        r = tl.div_rn(a, b)
    return r


@triton.jit
def _adam_tile(hdr_ptr, p_ptr, g_ptr, m_ptr, v_ptr, x_ptr, step_size, bc2_sqrt, offs, n, CT: tl.constexpr,
               AMSGRAD: tl.constexpr, FULL: tl.constexpr, ALIGNED: tl.constexpr, BLOCK: tl.constexpr):
    w1 = _f(hdr_ptr, 0, CT)
    beta2 = _f(hdr_ptr, 1, CT)
    w2 = _f(hdr_ptr, 2, CT)
    eps = _f(hdr_ptr, 3, CT)
    wd = _f(hdr_ptr, 4, CT)
    decay = _f(hdr_ptr, 5, CT)
    maximize = tl.load(hdr_ptr + 8)
    p = _load(p_ptr, offs, n, CT, FULL, ALIGNED, BLOCK)
    g = _load(g_ptr, offs, n, CT, FULL, ALIGNED, BLOCK)
    m = _load(m_ptr, offs, n, CT, FULL, ALIGNED, BLOCK)
    v = _load(v_ptr, offs, n, CT, FULL, ALIGNED, BLOCK)
    if maximize != 0:
        g = g * -1.0  # IEEE negation (Triton 3.6 computes -g as 0 - g)
    if wd != 0:  # Adam's coupled weight decay
        g = g + p * wd
    if decay != 1:  # AdamW's decoupled weight decay: p * (1 - lr * wd)
        p = p * decay
    m = m + w1 * (g - m)  # lerp(m, g, 1 - beta1)
    v = v * beta2
    v = v + (g * g) * w2
    if AMSGRAD:
        x = tl.maximum(_load(x_ptr, offs, n, CT, FULL, ALIGNED, BLOCK), v)
        _store(x_ptr, offs, n, x, FULL, ALIGNED, BLOCK)
        s = _sqrt(x, CT == tl.float64)
    else:
        s = _sqrt(v, CT == tl.float64)
    denom = _div(s, bc2_sqrt, CT == tl.float64) + eps
    p = p - _div(m, denom, CT == tl.float64) * step_size
    _store(p_ptr, offs, n, p, FULL, ALIGNED, BLOCK)
    _store(m_ptr, offs, n, m, FULL, ALIGNED, BLOCK)
    _store(v_ptr, offs, n, v, FULL, ALIGNED, BLOCK)


@triton.jit
def _sgd_tile(hdr_ptr, p_ptr, g_ptr, b_ptr, offs, n, CT: tl.constexpr, MOMENTUM: tl.constexpr, FULL: tl.constexpr,
              ALIGNED: tl.constexpr, BLOCK: tl.constexpr):
    lr = _f(hdr_ptr, 0, CT)
    momentum = _f(hdr_ptr, 1, CT)
    damp_w = _f(hdr_ptr, 2, CT)  # 1 - dampening (exactly 1 without dampening: g * 1 == g)
    wd = _f(hdr_ptr, 3, CT)
    maximize = tl.load(hdr_ptr + 8)
    nesterov = tl.load(hdr_ptr + 9)
    first = tl.load(hdr_ptr + 10)  # the buffers are new: they start as the gradient
    p = _load(p_ptr, offs, n, CT, FULL, ALIGNED, BLOCK)
    g = _load(g_ptr, offs, n, CT, FULL, ALIGNED, BLOCK)
    if maximize != 0:
        g = g * -1.0
    if wd != 0:
        g = g + p * wd
    if MOMENTUM:
        if first != 0:
            b = g
        else:
            b = _load(b_ptr, offs, n, CT, FULL, ALIGNED, BLOCK) * momentum
            b = b + g * damp_w
        _store(b_ptr, offs, n, b, FULL, ALIGNED, BLOCK)
        if nesterov != 0:
            g = g + b * momentum
        else:
            g = b
    p = p - g * lr
    _store(p_ptr, offs, n, p, FULL, ALIGNED, BLOCK)


@triton.jit
def _typed(addr, ELEM: tl.constexpr):
    return addr.to(tl.pointer_type(ELEM), bitcast=True)


@triton.jit
def _pow_count(base, k):
    """base ** k (float64) for a count 0 <= k < 2**32, by binary exponentiation: within ~64 ulp of the
    correctly rounded power, far below the float32 rounding of the step size it feeds."""
    r = base * 0.0 + 1.0
    b = base
    for _ in tl.static_range(32):
        r = tl.where((k & 1) != 0, r * b, r)
        b = b * b
        k = k >> 1
    return r


@triton.jit
def _bias_corrections(hdr_ptr, row, CT: tl.constexpr, CAPTURABLE: tl.constexpr):
    """Adam's step size lr / (1 - beta1**step) and sqrt(1 - beta2**step): from the header (computed on the
    host), or with CAPTURABLE from the parameter's step count on the device (info column 7: the address of
    its float32 step tensor, already incremented by ``adam_count_kernel``), in float64 as the host does."""
    if CAPTURABLE:
        k = tl.load(row + 7).to(tl.pointer_type(tl.float32), bitcast=True)
        k = tl.load(k).to(tl.int64)
        lr = tl.load(hdr_ptr + 6).to(tl.float64, bitcast=True)
        beta1 = tl.load(hdr_ptr + 7).to(tl.float64, bitcast=True)
        beta2 = tl.load(hdr_ptr + 1).to(tl.float64, bitcast=True)
        step_size = (lr / (1.0 - _pow_count(beta1, k))).to(CT)
        bc2_sqrt = tl.sqrt(1.0 - _pow_count(beta2, k)).to(CT)
    else:
        step_size = _f(hdr_ptr, 6, CT)
        bc2_sqrt = _f(hdr_ptr, 7, CT)
    return step_size, bc2_sqrt


@triton.jit
def _adam_dtype(hdr_ptr, row, offs, n, ELEM: tl.constexpr, CT: tl.constexpr, AMSGRAD: tl.constexpr,
                CAPTURABLE: tl.constexpr, FULL: tl.constexpr, ALIGNED: tl.constexpr, BLOCK: tl.constexpr):
    p_ptr = _typed(tl.load(row + 0), ELEM)
    g_ptr = _typed(tl.load(row + 1), ELEM)
    m_ptr = _typed(tl.load(row + 2), ELEM)
    v_ptr = _typed(tl.load(row + 3), ELEM)
    x_ptr = _typed(tl.load(row + 4), ELEM)
    step_size, bc2_sqrt = _bias_corrections(hdr_ptr, row, CT, CAPTURABLE)
    _adam_tile(hdr_ptr, p_ptr, g_ptr, m_ptr, v_ptr, x_ptr, step_size, bc2_sqrt, offs, n, CT, AMSGRAD, FULL, ALIGNED,
               BLOCK)


@triton.jit
def _adam_any(hdr_ptr, row, offs, n, code, AMSGRAD: tl.constexpr, CAPTURABLE: tl.constexpr, FULL: tl.constexpr,
              ALIGNED: tl.constexpr, BLOCK: tl.constexpr):
    if code == 0:
        _adam_dtype(hdr_ptr, row, offs, n, tl.float32, tl.float32, AMSGRAD, CAPTURABLE, FULL, ALIGNED, BLOCK)
    elif code == 1:
        _adam_dtype(hdr_ptr, row, offs, n, tl.float16, tl.float32, AMSGRAD, CAPTURABLE, FULL, ALIGNED, BLOCK)
    elif code == 2:
        _adam_dtype(hdr_ptr, row, offs, n, tl.bfloat16, tl.float32, AMSGRAD, CAPTURABLE, FULL, ALIGNED, BLOCK)
    else:
        _adam_dtype(hdr_ptr, row, offs, n, tl.float64, tl.float64, AMSGRAD, CAPTURABLE, FULL, ALIGNED, BLOCK)


@triton.jit
def adam_kernel(hdr_ptr, info_ptr, tiles_ptr, AMSGRAD: tl.constexpr, CAPTURABLE: tl.constexpr, ALIGNED: tl.constexpr,
                BLOCK: tl.constexpr):
    """Adam/AdamW on BLOCK elements of one tensor (info row: p, g, exp_avg, exp_avg_sq, max_exp_avg_sq, numel,
    dtype code, [CAPTURABLE: the address of the tensor's step count])."""
    pid = tl.program_id(0).to(tl.int64)
    t = tl.load(tiles_ptr + 2 * pid)
    start = tl.load(tiles_ptr + 2 * pid + 1)
    row = info_ptr + t * 8
    n = tl.load(row + 5)
    code = tl.load(row + 6)
    offs = start + tl.arange(0, BLOCK).to(tl.int64)
    if ALIGNED:  # full tiles: unmasked 128-bit accesses; the last tile of a tensor masked
        if start + BLOCK <= n:
            _adam_any(hdr_ptr, row, offs, n, code, AMSGRAD, CAPTURABLE, True, True, BLOCK)
        else:
            _adam_any(hdr_ptr, row, offs, n, code, AMSGRAD, CAPTURABLE, False, True, BLOCK)
    else:  # some tensor at an odd address (a view): scalar accesses anyway, masked everywhere (half the code)
        _adam_any(hdr_ptr, row, offs, n, code, AMSGRAD, CAPTURABLE, False, False, BLOCK)


@triton.jit
def adam_count_kernel(info_ptr):
    """``step += 1`` for the float32 step count of tensor ``program_id`` (info column 7), before a CAPTURABLE
    ``adam_kernel`` reads it: PyTorch's ``_foreach_add_(state_steps, 1)`` as one launch."""
    row = info_ptr + tl.program_id(0).to(tl.int64) * 8
    k = tl.load(row + 7).to(tl.pointer_type(tl.float32), bitcast=True)
    tl.store(k, tl.load(k) + 1.0)


@triton.jit
def _sgd_dtype(hdr_ptr, row, offs, n, ELEM: tl.constexpr, CT: tl.constexpr, MOMENTUM: tl.constexpr,
               FULL: tl.constexpr, ALIGNED: tl.constexpr, BLOCK: tl.constexpr):
    p_ptr = _typed(tl.load(row + 0), ELEM)
    g_ptr = _typed(tl.load(row + 1), ELEM)
    b_ptr = _typed(tl.load(row + 2), ELEM)
    _sgd_tile(hdr_ptr, p_ptr, g_ptr, b_ptr, offs, n, CT, MOMENTUM, FULL, ALIGNED, BLOCK)


@triton.jit
def _sgd_any(hdr_ptr, row, offs, n, code, MOMENTUM: tl.constexpr, FULL: tl.constexpr, ALIGNED: tl.constexpr,
             BLOCK: tl.constexpr):
    if code == 0:
        _sgd_dtype(hdr_ptr, row, offs, n, tl.float32, tl.float32, MOMENTUM, FULL, ALIGNED, BLOCK)
    elif code == 1:
        _sgd_dtype(hdr_ptr, row, offs, n, tl.float16, tl.float32, MOMENTUM, FULL, ALIGNED, BLOCK)
    elif code == 2:
        _sgd_dtype(hdr_ptr, row, offs, n, tl.bfloat16, tl.float32, MOMENTUM, FULL, ALIGNED, BLOCK)
    else:
        _sgd_dtype(hdr_ptr, row, offs, n, tl.float64, tl.float64, MOMENTUM, FULL, ALIGNED, BLOCK)


@triton.jit
def sgd_kernel(hdr_ptr, info_ptr, tiles_ptr, MOMENTUM: tl.constexpr, ALIGNED: tl.constexpr, BLOCK: tl.constexpr):
    """SGD on BLOCK elements of one tensor (info row: p, g, momentum_buffer)."""
    pid = tl.program_id(0).to(tl.int64)
    t = tl.load(tiles_ptr + 2 * pid)
    start = tl.load(tiles_ptr + 2 * pid + 1)
    row = info_ptr + t * 8
    n = tl.load(row + 5)
    code = tl.load(row + 6)
    offs = start + tl.arange(0, BLOCK).to(tl.int64)
    if ALIGNED:  # full tiles: unmasked 128-bit accesses; the last tile of a tensor masked
        if start + BLOCK <= n:
            _sgd_any(hdr_ptr, row, offs, n, code, MOMENTUM, True, True, BLOCK)
        else:
            _sgd_any(hdr_ptr, row, offs, n, code, MOMENTUM, False, True, BLOCK)
    else:  # some tensor at an odd address (a view): scalar accesses anyway, masked everywhere (half the code)
        _sgd_any(hdr_ptr, row, offs, n, code, MOMENTUM, False, False, BLOCK)
