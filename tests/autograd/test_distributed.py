"""autograd.distributed under `mpiexec -n 2` (tests/autograd/_dist_worker.py): every collective on every dtype
against NumPy on cpu and interpreted cuda; failures (a rank raises, is killed, hangs, calls a mismatched
collective) end in seconds with an error naming the rank and the collective; the launcher."""

import os
import re
import subprocess
import sys
import time

import pytest

from autograd.distributed.run import find_mpiexec

try:
    import mpi4py  # noqa: F401

    MPIEXEC = find_mpiexec()
except ImportError:
    MPIEXEC = None

pytestmark = pytest.mark.skipif(MPIEXEC is None, reason="needs mpi4py and mpiexec (pip install -e '.[distributed]')")
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
WORKER = os.path.join(HERE, "_dist_worker.py")


def mpi_env(**extra):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), **extra)
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "AUTOGRAD_DISTRIBUTED_DEBUG", "TORCH_DISTRIBUTED_DEBUG"):
        if k not in extra:
            env.pop(k, None)
    return env


def mpirun(*args, timeout=90, **env):
    t = time.monotonic()
    p = subprocess.run([MPIEXEC, "-n", "2", sys.executable, WORKER, *args], env=mpi_env(**env),
                       capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout + p.stderr, time.monotonic() - t


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_every_collective_on_every_dtype(device):
    rc, out, _ = mpirun("collectives", device)
    assert rc == 0, out
    counts = re.findall(rf"rank \d: (\d+) collective checks OK on {device}", out)
    assert len(counts) == 2 and int(counts[0]) > 300, out


def test_a_rank_that_raises_names_itself_in_the_others_error():
    rc, out, dt = mpirun("raise", DIST_TIMEOUT="30")
    assert rc != 0
    assert "ZeroDivisionError: rank 1 divided by zero" in out
    # its notice normally arrives first; when its process is gone already, its pid names it
    assert re.search(r"rank 0 caught: DistBackendError: all_reduce #1 \(float32 \[4\] on cpu, ReduceOp.SUM\) on "
                     r"rank 0: rank 1 "
                     r"(failed with ZeroDivisionError: rank 1 divided by zero|\(pid \d+\) is no longer running)",
                     out), out
    assert dt < 20, dt  # well inside the 30 s timeout


def test_a_killed_rank_ends_the_job():
    rc, out, dt = mpirun("kill", DIST_TIMEOUT="30")
    assert rc != 0
    pid = re.search(r"rank 1 is pid (\d+)", out).group(1)
    assert f"PID {pid}" in out and "Killed" in out, out  # mpiexec names the dead process and its signal
    assert dt < 20, dt


def test_a_hung_rank_times_out_and_aborts_the_job():
    rc, out, dt = mpirun("hang", DIST_TIMEOUT="2")
    assert rc != 0, out
    want = "DistTimeoutError: all_reduce #1 (float32 [4] on cpu, ReduceOp.SUM) on rank 0 timed out after 2 s"
    assert want in out, out
    assert dt < 25, (dt, out)  # the sleeping rank (30 s) is aborted


@pytest.mark.parametrize("var", ["AUTOGRAD_DISTRIBUTED_DEBUG", "TORCH_DISTRIBUTED_DEBUG"])
@pytest.mark.parametrize("mode", ["mismatch", "mismatch-op"])
def test_detail_debug_reports_mismatched_collectives(mode, var):
    rc, out, dt = mpirun(mode, DIST_TIMEOUT="30", **{var: "DETAIL"})
    assert rc != 0
    assert "the ranks called mismatched collectives" in out, out
    assert "rank 0:" in out and "rank 1:" in out
    if mode == "mismatch":
        assert "shape [4]" in out and "shape [5]" in out
    assert dt < 20, dt


def test_launcher_sets_the_torchrun_environment(tmp_path):
    script = tmp_path / "s.py"
    script.write_text(
        "import os, sys\n"
        "import autograd as ag, autograd.distributed as dist\n"
        "dist.init_process_group('mpi', init_method='env://')\n"
        "t = ag.ones(2) * (dist.get_rank() + 1)\n"
        "dist.all_reduce(t)\n"
        "line = ' '.join(map(str, ['OUT', os.environ['RANK'], os.environ['LOCAL_RANK'], os.environ['WORLD_SIZE'], "
        "os.environ['MASTER_ADDR'], os.environ['MASTER_PORT'], t.tolist(), sys.argv[1:]]))\n"
        f"open(os.path.join({str(tmp_path)!r}, 'out' + os.environ['RANK']), 'w').write(line)\n")
    p = subprocess.run([sys.executable, "-m", "autograd.distributed.run", "--nproc-per-node", "2",
                        "--master-port", "29533", str(script), "x"], env=mpi_env(), capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    lines = [(tmp_path / f"out{r}").read_text() for r in range(2)]
    assert lines == [f"OUT {r} {r} 2 127.0.0.1 29533 [3.0, 3.0] ['x']" for r in range(2)], p.stdout


def test_without_a_process_group_collectives_say_so():
    import autograd as ag
    import autograd.distributed as dist

    assert dist.is_available() and not dist.is_initialized()
    with pytest.raises(RuntimeError, match="all_reduce: Default process group has not been initialized"):
        dist.all_reduce(ag.ones(2))


def test_nccl_call_sequence_on_the_fake_library(tmp_path):
    """Our ctypes binding against tests/autograd/fake_libnccl.c (interpreted cuda): the device pointers of the
    allocator, NCCL's type and op codes, roots, and the current stream reach libnccl."""
    import shutil

    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("needs a C compiler for the fake libnccl")
    lib = tmp_path / "libnccl_fake.so"
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-Wall", "-o", str(lib), os.path.join(HERE, "fake_libnccl.c")],
                   check=True, capture_output=True)
    env = mpi_env(AUTOGRAD_NCCL_LIBRARY=str(lib), FAKE_NCCL_LOG=str(tmp_path / "log"), TKERNELS_INTERPRET="1",
                  TRITON_INTERPRET="1")
    p = subprocess.run([MPIEXEC, "-n", "2", sys.executable, os.path.join(HERE, "_nccl_worker.py")], env=env,
                       capture_output=True, text=True, timeout=90)
    assert p.returncode == 0, p.stdout + p.stderr
    ids = set()
    for r in range(2):
        want = (tmp_path / f"log.expect.{r}").read_text().splitlines()
        got = (tmp_path / f"log.{r}").read_text().splitlines()
        ids.add(got[0].split(" id=")[1])
        got[0] = got[0].split(" id=")[0]
        got = [re.sub(r"recv=0x[0-9a-f]+", "recv=*", g) if "recv=*" in w else g for g, w in zip(got, want)] + \
            got[len(want):]
        assert got == want, (r, got, want)
    assert len(ids) == 1  # rank 0's ncclUniqueId reached rank 1 over MPI


@pytest.mark.gpu
def test_nccl_on_a_real_gpu_one_rank():
    """A real libnccl (the nvidia-nccl-cu12 wheel): a one-rank world on the GPU (two ranks need two GPUs)."""
    script = ("import autograd as ag, autograd.distributed as dist\n"
              "dist.init_process_group('nccl')\n"
              "t = ag.arange(1000, dtype=ag.float32, device='cuda')\n"
              "dist.all_reduce(t); dist.all_reduce(t, op=dist.ReduceOp.AVG); dist.broadcast(t, 0)\n"
              "assert t.cpu().numpy().tolist() == list(range(1000)), t\n"
              "o = ag.zeros(1000, device='cuda'); dist.all_gather_into_tensor(o, t)\n"
              "assert (o.cpu().numpy() == t.cpu().numpy()).all()\n"
              "dist.destroy_process_group(); print('NCCL OK')\n")
    p = subprocess.run([MPIEXEC, "-n", "1", sys.executable, "-c", script], env=mpi_env(TKERNELS_INTERPRET="0"),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "NCCL OK" in p.stdout, p.stdout + p.stderr


def test_debug_level_names_and_bad_values(monkeypatch):
    from autograd.distributed import _env

    monkeypatch.delenv("AUTOGRAD_DISTRIBUTED_DEBUG", raising=False)
    monkeypatch.delenv("TORCH_DISTRIBUTED_DEBUG", raising=False)
    assert _env.debug_level() == "OFF"
    monkeypatch.setenv("TORCH_DISTRIBUTED_DEBUG", "detail")
    assert _env.debug_level() == "DETAIL"
    monkeypatch.setenv("AUTOGRAD_DISTRIBUTED_DEBUG", "info")  # ours first
    assert _env.debug_level() == "INFO"
    monkeypatch.setenv("AUTOGRAD_DISTRIBUTED_DEBUG", "LOUD")
    with pytest.raises(ValueError, match="AUTOGRAD_DISTRIBUTED_DEBUG='LOUD': expected OFF, INFO or DETAIL"):
        _env.debug_level()


def test_launcher_refuses_several_nodes(capsys):
    from autograd.distributed import run

    assert run.main(["--nnodes", "2", "x.py"]) == 2
    assert "--nnodes 2 is not supported" in capsys.readouterr().err
    assert run.main(["--nproc-per-node", "0", "x.py"]) == 2
