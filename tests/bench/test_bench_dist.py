"""bench dist's ranks (bench/dist_worker.py under mpiexec) report what the tables need."""

import pytest

from tests.autograd.test_distributed import MPIEXEC

pytestmark = pytest.mark.skipif(MPIEXEC is None, reason="needs mpi4py and mpiexec (pip install -e '.[distributed]')")


def test_allreduce_and_ddp_rows():
    from bench import dist

    rows = dist._launch(2, "allreduce", "1024,1048576", 1, 0.001, timeout=60)
    assert [r["bytes"] for r in rows] == [1024, 1048576]
    assert all(r["ours_s"] > 0 and r["raw_s"] > 0 and r["ours_med_s"] >= r["ours_s"] for r in rows)
    step = dist._launch(2, "ddp", 2, 1, 64, timeout=60)
    assert step["step_s"] > 0 and step["params"] == 3 * (64 * 64 + 64) + 64 * 10 + 10
