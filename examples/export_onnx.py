"""Export the digits CNN to ONNX and run it in onnxruntime (needs the onnx extra: pip install '.[onnx]').

    python examples/export_onnx.py                      # loads runs/digits/digits_cnn.safetensors if present,
                                                        # else trains the CNN for a few epochs
    python examples/export_onnx.py --out runs/digits --opset 18

It traces the model (autograd.jit.trace), saves the trace (one safetensors file with the graph as JSON),
exports it with a dynamic batch axis, checks it with onnx.checker, and compares onnxruntime's logits and
accuracy on the held-out digits with our eager model's.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import autograd as ag  # noqa: E402
import nn  # noqa: E402
from examples.train_digits import load_data, make_model  # noqa: E402
from nn import functional as F  # noqa: E402


def get_model(out, epochs, seed):
    """The trained CNN: examples/train_digits.py's checkpoint when it exists, else a short training run here."""
    path = os.path.join(out, "digits_cnn.safetensors")
    model = make_model("cnn")
    if os.path.exists(path):
        model.load_state_dict(nn.load(path))
        print(f"loaded {path}")
        return model.eval()
    (xtr, ytr), _ = load_data(seed)
    ag.manual_seed(seed)
    opt = nn.optim.AdamW(model.parameters(), lr=3e-3)
    data = nn.data.TensorDataset(ag.from_numpy(xtr), ag.from_numpy(ytr))
    t0 = time.perf_counter()
    for _ in range(epochs):
        for xb, yb in nn.data.DataLoader(data, batch_size=64, shuffle=True):
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
    print(f"trained the CNN for {epochs} epochs in {time.perf_counter() - t0:.1f} s (no checkpoint at {path})")
    return model.eval()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="runs/digits", help="where train_digits.py left its checkpoint; outputs go here")
    p.add_argument("--epochs", type=int, default=3, help="epochs of training when there is no checkpoint")
    p.add_argument("--opset", type=int, default=18)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    import onnx
    import onnxruntime as ort

    os.makedirs(args.out, exist_ok=True)
    model = get_model(args.out, args.epochs, args.seed)
    _, (xte, yte) = load_data(args.seed)
    example = ag.from_numpy(xte[:2])

    traced = ag.jit.trace(model, (example,))
    print(traced.graph)
    traced.save(os.path.join(args.out, "digits_cnn.traced.safetensors"))

    path = os.path.join(args.out, "digits_cnn.onnx")
    ag.onnx.export(model, (example,), path, input_names=["image"], output_names=["logits"],
                   dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}}, opset_version=args.opset)
    onnx.checker.check_model(onnx.load(path), full_check=True)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    (logits,) = session.run(None, {"image": xte})  # the whole test split: a batch size never traced
    with ag.no_grad():
        eager = model(ag.from_numpy(xte)).numpy()
    diff = float(np.abs(logits - eager).max())
    acc_ort, acc_eager = float((logits.argmax(1) == yte).mean()), float((eager.argmax(1) == yte).mean())
    print(f"exported {path} (opset {args.opset}, {os.path.getsize(path)} bytes); onnxruntime on {len(yte)} test "
          f"digits: accuracy {acc_ort:.4f} (eager {acc_eager:.4f}), max |logits - eager| = {diff:.2e}")
    if diff > 1e-4:
        raise RuntimeError(f"onnxruntime's logits differ from eager by {diff}")
    return {"max_diff": diff, "acc_onnx": acc_ort, "acc_eager": acc_eager, "path": path}


if __name__ == "__main__":
    main()
