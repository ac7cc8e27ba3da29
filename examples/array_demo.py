"""A short tour of tkernels on the default device (the GPU when one is usable, else the CPU)."""

import numpy as np

import tkernels as tk


def main():
    dev = "cuda" if tk.cuda.is_available() else "cpu"
    tk.random.seed(0)
    x = tk.random.randn((4, 5), device=dev)
    w = tk.random.randn((5, 3), device=dev)
    y = tk.gelu(x @ w + 1.0)
    print("device:", dev)
    print("x @ w + 1 -> gelu:\n", y)
    print("row sums:", tk.sum(y, axis=1))
    ref = x.numpy() @ w.numpy() + 1.0
    print("max |x@w - numpy| =", float(np.abs((x @ w).numpy() + 1.0 - ref).max()))


if __name__ == "__main__":
    main()
