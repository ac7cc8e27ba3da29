"""``autograd.onnx``: export of traced graphs to ONNX (needs the ``onnx`` extra)."""
