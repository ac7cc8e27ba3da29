"""Matmul precision switches (the counterpart of ``torch.backends.cuda.matmul``).

``allow_tf32``: when True, float32 matrix products on cuda (``matmul`` and everything built on it: ``vecdot``,
``tensordot``, ``einsum``, ``tkernels.ops.linear``) may run on tensor cores in TF32 (operands rounded to a
10-bit mantissa, products accumulated in float32): about 8x the float32 rate of an H100/H200, at a relative
error near 1e-3 instead of 1e-6. Default False, like PyTorch: float32 stays IEEE unless asked. Read at every
call, so it can be switched at any time::

    import tkernels.backends.matmul
    tkernels.backends.matmul.allow_tf32 = True

It changes nothing on cpu (NumPy computes float32 in IEEE) nor for other dtypes (float16/bfloat16 always use
tensor cores with float32 accumulation; float64 and integers never do).
"""

allow_tf32 = False
