"""Interpreted cuda never imports torch, even when torch is installed (DESIGN.md §5).

Triton 3.6's argument specializer imports torch on its first use when it can (the interpreter specializes
every argument through it), and its stock driver does too. The child here has a stand-in ``torch`` package
first on its path that records being imported (and imports cleanly, as an installed torch would); it runs a
training step and the kernels that touch the specializer in other ways (random, dropout, attention, matmul,
float64 scalars), then reports. Runs on every Triton the CI matrix has (3.6.0 and the newest).
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

CHILD = textwrap.dedent("""
    import json, os, sys
    import numpy as np
    import tkernels as tk
    import autograd as ag
    import nn
    from nn import functional as F

    assert tk.cuda.is_interpreted()
    ag.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Dropout(0.1), nn.Linear(16, 3)).to("cuda")
    opt = nn.optim.AdamW(model.parameters(), lr=1e-2)
    x, y = ag.randn(5, 8, device="cuda"), ag.randint(0, 3, (5,), device="cuda")
    for _ in range(2):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    q = ag.rand(1, 2, 4, 8, device="cuda")
    att = F.scaled_dot_product_attention(q, q, q, is_causal=True, dropout_p=0.1)
    m = (ag.ones(3, 3, dtype=ag.float64, device="cuda") * 0.1) @ ag.ones(3, 3, dtype=ag.float64, device="cuda")
    out = {"loss": float(loss.item()), "att": list(att.shape), "m": float(m.sum().item()),
           "torch_in_modules": "torch" in sys.modules,
           "recorded": os.path.exists(os.environ["STUB_TORCH_RECORD"])}
    print(json.dumps(out))
    """)


def test_interpreted_cuda_never_imports_an_installed_torch(tmp_path):
    stub = tmp_path / "site" / "torch"
    stub.mkdir(parents=True)
    record = tmp_path / "torch-was-imported.txt"
    (stub / "__init__.py").write_text(textwrap.dedent(f"""
        import traceback
        with open({str(record)!r}, "a") as f:  # who imported us
            traceback.print_stack(file=f)
        __version__ = "0.0.0+stub"
        class Tensor:
            pass
        class dtype:
            pass
        """))
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET",)}
    env.update(TKERNELS_INTERPRET="1", STUB_TORCH_RECORD=str(record),
               PYTHONPATH=os.pathsep.join([str(stub.parent), str(ROOT)]))
    check = subprocess.run([sys.executable, "-c", "import torch; print(torch.__version__)"], env=env,
                           capture_output=True, text=True, timeout=60)
    assert check.stdout.strip() == "0.0.0+stub", "the stand-in torch is not what `import torch` finds"
    record.unlink()
    r = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=600,
                       cwd=ROOT)
    assert r.returncode == 0, r.stderr[-4000:]
    res = json.loads(r.stdout.strip().splitlines()[-1])
    imported_by = record.read_text() if record.exists() else ""
    assert not res["recorded"] and not res["torch_in_modules"], f"torch was imported from:\n{imported_by}"
    assert res["att"] == [1, 2, 4, 8] and abs(res["m"] - 2.7) < 1e-12 and res["loss"] > 0
