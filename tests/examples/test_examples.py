"""Short smoke runs of the examples on the cpu: they train (the loss falls / accuracy beats chance), save and
reload their checkpoint, and print what the README shows."""

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)


def test_train_digits_smoke(tmp_path, capsys):
    from examples import train_digits

    hist = train_digits.main(["--model", "both", "--epochs", "1", "--device", "cpu", "--quiet",
                              "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert hist["mlp"]["test_acc"][-1] > 0.5 and hist["cnn"]["test_acc"][-1] > 0.3
    assert "mlp: test accuracy" in out and "cnn: test accuracy" in out and "reloaded: same accuracy" in out
    assert (tmp_path / "digits_mlp.safetensors").exists() and (tmp_path / "digits_cnn.safetensors").exists()
    assert (tmp_path / "mlp_checkpoints" / "last.safetensors").exists()  # the Trainer's Checkpoint plugin
    try:
        import tensorboard  # noqa: F401
    except ImportError:
        pass
    else:  # the TensorBoardLogger plugin wrote event files
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

        acc = EventAccumulator(str(tmp_path / "tensorboard" / "mlp"))
        acc.Reload()
        assert {"epoch/loss", "test/accuracy", "train/loss"} <= set(acc.Tags()["scalars"])
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return
    assert (tmp_path / "digits_curves.png").stat().st_size > 1000


def test_char_gpt_smoke(capsys):
    from examples import char_gpt

    first, last = char_gpt.main(["--config", "tiny", "--device", "cpu", "--steps", "30", "--sample-len", "20"])
    out = capsys.readouterr().out
    assert last < first and "tokens/s" in out and "sample:" in out


def test_custom_triton_function_runs(capsys):
    from examples import custom_triton_function

    custom_triton_function.main()
    assert "OK" in capsys.readouterr().out


@pytest.mark.slow
def test_train_digits_reaches_97_percent(tmp_path):
    from examples import train_digits

    hist = train_digits.main(["--model", "mlp", "--device", "cpu", "--quiet", "--out", str(tmp_path)])
    assert max(hist["mlp"]["test_acc"]) >= 0.97


def test_hogwild_digits_reaches_the_single_process_accuracy(capsys):
    pytest.importorskip("sklearn")
    from examples import hogwild_digits

    res = hogwild_digits.main(["--workers", "2", "--epochs", "3", "--start-method", "spawn"])
    out = capsys.readouterr().out
    assert "hogwild, 2 processes: test accuracy" in out and "one process:" in out
    assert res["single"] > 0.85 and res["hogwild"] >= res["single"] - 0.03  # the workers trained the shared model
    short = hogwild_digits.main(["--workers", "2", "--epochs", "1", "--max-steps", "3", "--start-method", "fork",
                                 "--no-baseline"])
    assert 0.0 <= short["hogwild"] <= 1.0
