"""Test configuration shared by every package's tests."""

import os
import sys

import pytest

# CI has no GPU: cuda arrays run interpreted (host memory, Triton's interpreter) unless the caller chose a mode
# (bench.gpu_check runs the `gpu` tests with TKERNELS_INTERPRET=0 on a real GPU).
os.environ.setdefault("TKERNELS_INTERPRET", "1")
if os.environ["TKERNELS_INTERPRET"] == "1":  # before anything imports triton: @triton.jit reads it at decoration
    os.environ.setdefault("TRITON_INTERPRET", "1")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


def pytest_collection_modifyitems(config, items):
    """Tests marked ``slow`` run first (a long test handed out last keeps the run going on one worker while the
    others idle; scripts/test.sh runs ``-n 2 --dist worksteal``). Tests marked ``gpu`` need a real GPU; without
    one they are deselected here, and run by bench.gpu_check."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)  # stable: collection order otherwise
    try:
        import tkernels.cuda as tkc

        real_gpu = tkc.is_available() and not tkc.is_interpreted()
    except Exception:  # noqa: BLE001 - no runtime layer yet, or no driver: no GPU
        real_gpu = False
    if real_gpu:
        return
    skip = pytest.mark.skip(reason="needs a real CUDA GPU (run: python -m bench.gpu_check)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _fresh_device_errors():
    """Each test starts with empty cuda error buffers (an error one test's kernels recorded and never reported
    must not raise in the next test: tkernels/cuda/device_errors.py)."""
    errors = sys.modules.get("tkernels.cuda.device_errors")
    if errors is not None and errors._buffers:
        errors.clear_all()
    yield
