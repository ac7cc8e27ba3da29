"""Kernel-level ops that the array API lacks (softmax, norms, losses, convolution, pooling, attention...),
each with its ``*_backward`` entries, NumPy-style argument names."""
