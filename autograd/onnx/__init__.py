"""``autograd.onnx``: export of traced graphs (``autograd.jit``) to ONNX, like ``torch.onnx.export``; the
``onnx`` package (the ``onnx`` extra) is imported on export, not here."""

from .builder import UnsupportedOperatorError
from .export import DEFAULT_OPSET, MIN_OPSET, export, max_opset, supported_ops

__all__ = ["export", "supported_ops", "max_opset", "UnsupportedOperatorError", "MIN_OPSET", "DEFAULT_OPSET"]
