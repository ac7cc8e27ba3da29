"""examples/export_onnx.py: trains (no checkpoint here) or loads the digits CNN, exports it, runs onnxruntime."""

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

pytest.importorskip("onnxruntime")
pytest.importorskip("sklearn")


def test_export_onnx_smoke(tmp_path, capsys):
    from examples import export_onnx

    r = export_onnx.main(["--out", str(tmp_path), "--epochs", "1"])
    assert r["max_diff"] < 1e-4 and r["acc_onnx"] == r["acc_eager"] and r["acc_onnx"] > 0.3
    assert "onnxruntime on 359 test digits" in capsys.readouterr().out
    assert (tmp_path / "digits_cnn.onnx").exists() and (tmp_path / "digits_cnn.traced.safetensors").exists()
    import nn  # the checkpoint path: loads instead of training
    from examples.train_digits import make_model

    nn.save(make_model("cnn").state_dict(), str(tmp_path / "digits_cnn.safetensors"))
    export_onnx.main(["--out", str(tmp_path)])
    assert "loaded" in capsys.readouterr().out
