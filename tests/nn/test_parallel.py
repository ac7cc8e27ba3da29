"""nn.parallel.DistributedDataParallel under `mpiexec -n 2` (tests/nn/_ddp_worker.py): parameters after a few
steps equal a single-process run on the concatenated batches, on cpu and interpreted cuda; nn.data's
DistributedSampler with a process group."""

import os
import subprocess
import sys

import pytest

from tests.autograd.test_distributed import MPIEXEC, mpi_env

pytestmark = pytest.mark.skipif(MPIEXEC is None, reason="needs mpi4py and mpiexec (pip install -e '.[distributed]')")
HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_ddp_digits_matches_single_process(device, tmp_path):
    env = mpi_env(DDP_TMP=str(tmp_path))
    steps = "4" if device == "cpu" else "2"
    p = subprocess.run([MPIEXEC, "-n", "2", sys.executable, os.path.join(HERE, "_ddp_worker.py"), device, steps],
                       env=env, capture_output=True, text=True, timeout=120)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    assert out.count(f"DDP OK on {device}") == 2, out
