"""``autograd.onnx``: export of traced graphs (``autograd.jit``) to ONNX, like ``torch.onnx.export``. The mappings
and the ``onnx`` package (the ``onnx`` extra) load on the first export, not with ``import autograd``."""

from .builder import DEFAULT_OPSET, MIN_OPSET, UnsupportedOperatorError

__all__ = ["export", "supported_ops", "max_opset", "UnsupportedOperatorError", "MIN_OPSET", "DEFAULT_OPSET"]


def export(model, args, f=None, **kwargs):
    """Export ``model(*args)`` to ONNX (see ``autograd.onnx.exporter.export`` for the arguments)."""
    from . import exporter

    return exporter.export(model, args, f, **kwargs)


def supported_ops() -> list:
    """The traced op names that have an ONNX mapping."""
    from . import exporter

    return exporter.supported_ops()


def max_opset() -> int:
    """The newest default-domain opset the installed ``onnx`` package knows."""
    from . import exporter

    return exporter.max_opset()
