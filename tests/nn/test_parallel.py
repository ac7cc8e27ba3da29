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


def test_ddp_digits_example_under_the_launcher(tmp_path):
    root = os.path.dirname(os.path.dirname(HERE))
    out = tmp_path / "w.safetensors"
    p = subprocess.run([sys.executable, "-m", "autograd.distributed.run", "--nproc-per-node", "2",
                        os.path.join(root, "examples", "ddp_digits.py"), "--epochs", "2", "--save", str(out)],
                       env=mpi_env(), capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    acc = float(p.stdout.strip().splitlines()[-1].split("test acc ")[1].split()[0])
    assert acc > 0.8, p.stdout
    import nn

    assert sorted(nn.load(str(out))) == ["1.bias", "1.weight", "3.bias", "3.weight"]  # ddp.module's own names


def test_distributed_sampler_takes_the_process_groups_numbering(monkeypatch):
    import types

    import nn

    fake = types.SimpleNamespace(is_initialized=lambda: True, get_world_size=lambda: 3, get_rank=lambda: 2)
    monkeypatch.setitem(sys.modules, "autograd.distributed", fake)
    monkeypatch.setenv("WORLD_SIZE", "7")
    s = nn.data.DistributedSampler(list(range(10)), shuffle=False)
    assert (s.num_replicas, s.rank, list(s)) == (3, 2, [2, 5, 8, 1])  # padded with the first indices
